"""Scratchpad, preferences, playbooks and business context through the MCP client."""

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from memory_core.config.knowledge import KnowledgePolicy
from server.settings import Settings
from tests.backends import settings_on
from tests.catalog import KNOWLEDGE_DESTRUCTIVE_TOOLS, KNOWLEDGE_READ_ONLY_TOOLS, KNOWLEDGE_TOOLS
from tests.fakes import FakeEmbedder, FrozenClock, ready_fake
from tests.mcp_client import call, error, hosted


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    # Every test of this module runs on both backends, so a behaviour difference fails one.
    return settings_on(request, settings)


@pytest.fixture
async def semantic(settings: Settings, clock: FrozenClock) -> AsyncIterator[Client]:
    """A client whose server embeds with the deterministic FakeEmbedder."""
    lazy, _ = ready_fake()
    tuned = settings.model_copy(
        update={
            "knowledge": KnowledgePolicy(
                recurrence_similarity=0.8, chunk_chars=200, chunk_overlap=40, embed_batch=2
            )
        }
    )
    async with hosted(tuned, clock=clock, embedder=lazy) as c:
        yield c


def fake_cosine(a: str, b: str) -> float:
    va, vb = FakeEmbedder().embed([a, b])
    return float(np.dot(va, vb))


# ---- surface -------------------------------------------------------------------------------


async def test_knowledge_tools_are_listed_with_titles_and_hints(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= KNOWLEDGE_TOOLS
    for name in KNOWLEDGE_TOOLS:
        t = tools[name]
        assert t.title and t.description and t.output_schema and t.annotations
        assert t.annotations.open_world_hint is False
        assert t.annotations.read_only_hint is (name in KNOWLEDGE_READ_ONLY_TOOLS)
        assert bool(t.annotations.destructive_hint) is (name in KNOWLEDGE_DESTRUCTIVE_TOOLS)


# ---- scratchpad ----------------------------------------------------------------------------


async def test_scratchpad_keeps_64_and_the_65th_evicts_the_least_recently_used(
    client: Client,
) -> None:
    ids = [
        (await call(client, "scratchpad_write", session_id="s1", snippet=f"note number {i}"))[
            "snippet"
        ]["id"]
        for i in range(64)
    ]
    full = await call(client, "scratchpad_read", session_id="s1")
    assert full["count"] == 64 and full["cap"] == 64
    last = await call(client, "scratchpad_write", session_id="s1", snippet="note number 64")
    assert [e["id"] for e in last["evicted"]] == [ids[0]]
    after = await call(client, "scratchpad_read", session_id="s1")
    kept = {s["id"] for s in after["snippets"]}
    assert after["count"] == 64 and ids[0] not in kept and last["snippet"]["id"] in kept


async def test_reading_a_snippet_saves_it_from_eviction(client: Client) -> None:
    ids = [
        (await call(client, "scratchpad_write", session_id="s", snippet=f"fact {i}"))["snippet"][
            "id"
        ]
        for i in range(64)
    ]
    read = await call(client, "scratchpad_read", session_id="s", ids=[ids[0]])
    assert [s["id"] for s in read["snippets"]] == [ids[0]]
    evicted = (await call(client, "scratchpad_write", session_id="s", snippet="fact 64"))["evicted"]
    assert [e["id"] for e in evicted] == [ids[1]]  # not ids[0], which was just read
    # Reading everything keeps the relative order: the next eviction is the next oldest.
    await call(client, "scratchpad_read", session_id="s")
    evicted = (await call(client, "scratchpad_write", session_id="s", snippet="fact 65"))["evicted"]
    assert [e["id"] for e in evicted] == [ids[2]]


async def test_writing_the_same_snippet_again_refreshes_it(client: Client) -> None:
    first = await call(client, "scratchpad_write", session_id="s", snippet="Use tabs.")
    again = await call(client, "scratchpad_write", session_id="s", snippet="  use TABS ")
    assert first["status"] == "created" and again["status"] == "refreshed"
    assert again["snippet"]["id"] == first["snippet"]["id"]
    assert (await call(client, "scratchpad_read", session_id="s"))["count"] == 1


async def test_sessions_do_not_share_a_scratchpad(client: Client) -> None:
    await call(client, "scratchpad_write", session_id="a", snippet="only in a")
    assert (await call(client, "scratchpad_read", session_id="b"))["count"] == 0


# ---- promotion -----------------------------------------------------------------------------


async def test_explicit_promotion_to_preferences_survives_eviction(client: Client) -> None:
    written = await call(
        client, "scratchpad_write", session_id="s", snippet="Alice wants answers in French."
    )
    assert written["promotion"] is None and written["occurrences"] == 1
    sid = written["snippet"]["id"]
    promoted = await call(
        client,
        "scratchpad_promote",
        session_id="s",
        id=sid,
        target="preferences",
        user="alice",
        key="language",
    )
    assert promoted["promotion"] == {
        "target": "preferences",
        "ref": "language",
        "owner": "alice",
        "reason": "explicit",
    }
    snippet = (await call(client, "scratchpad_read", session_id="s"))["snippets"][0]
    assert snippet["promoted_to"] == "preferences" and snippet["promoted_ref"] == "language"
    for i in range(64):  # push the promoted snippet out of the scratchpad
        await call(client, "scratchpad_write", session_id="s", snippet=f"filler {i}")
    ids = {s["id"] for s in (await call(client, "scratchpad_read", session_id="s"))["snippets"]}
    assert sid not in ids
    got = await call(client, "preferences_get", user="alice", key="language")
    assert got["found"] and got["preference"]["value"] == "Alice wants answers in French."
    assert got["preference"]["origin"] == "scratchpad"


async def test_explicit_promotion_to_business_context_is_searchable_and_exported(
    client: Client,
) -> None:
    sid = (
        await call(
            client,
            "scratchpad_write",
            session_id="s",
            snippet="Refunds need a receipt.",
            tenant="acme",
        )
    )["snippet"]["id"]
    promoted = await call(
        client, "scratchpad_promote", session_id="s", id=sid, target="business_context"
    )
    assert promoted["promotion"]["owner"] == "acme"
    ref = promoted["promotion"]["ref"]
    again = await call(
        client, "scratchpad_promote", session_id="s", id=sid, target="business_context"
    )
    assert again["promotion"]["ref"] == ref  # idempotent
    found = await call(client, "search_business_context", tenant="acme", query="receipt refunds")
    assert found["hits"][0]["source"] == ref and found["mode"] == "keyword"
    exported = await call(client, "export_agent_md", tenant="acme")
    assert exported["learned_items"] == 1
    assert "## Learned\n\n- Refunds need a receipt." in exported["text"]


async def test_a_salient_snippet_is_promoted_at_write(client: Client) -> None:
    out = await call(
        client,
        "scratchpad_write",
        session_id="s",
        snippet="Bob is allergic to peanuts.",
        user="bob",
        salient=True,
    )
    assert out["promotion"]["reason"] == "salient"
    assert out["promotion"]["target"] == "preferences"
    assert out["snippet"]["promoted_to"] == "preferences"
    key = out["promotion"]["ref"]
    assert (await call(client, "preferences_get", user="bob", key=key))["found"]


async def test_recurrence_across_flows_promotes_without_a_model_by_equal_text(
    client: Client,
) -> None:
    outs = [
        await call(client, "scratchpad_write", session_id=f"flow-{i}", snippet=text, tenant="acme")
        for i, text in enumerate(
            ["Ship orders on Mondays.", "ship orders on mondays", "Ship orders, on Mondays!"]
        )
    ]
    assert [o["occurrences"] for o in outs] == [1, 2, 3]
    assert outs[0]["promotion"] is None and outs[1]["promotion"] is None
    assert outs[2]["promotion"]["reason"] == "recurrence"
    assert outs[2]["promotion"]["target"] == "business_context"
    assert "equal normalised text" in outs[2]["notes"][0]
    # The same text twice in one flow is one occurrence, not two.
    again = await call(
        client,
        "scratchpad_write",
        session_id="flow-0",
        snippet="Ship orders on Mondays.",
        tenant="acme",
    )
    assert again["occurrences"] == 3
    docs = await call(client, "export_agent_md", tenant="acme")
    assert docs["learned_items"] == 1


async def test_recurrence_counts_near_duplicates_by_embedding(semantic: Client) -> None:
    texts = [
        "the customer prefers invoices sent by email every month",
        "the customer prefers invoices sent by email each month",
        "customer prefers invoices sent by email every month",
    ]
    assert min(fake_cosine(texts[0], t) for t in texts[1:]) >= 0.8
    unrelated = "deploy the frontend on friday afternoons"
    assert fake_cosine(texts[0], unrelated) < 0.8
    first = await call(semantic, "scratchpad_write", session_id="f1", snippet=texts[0], user="u")
    other = await call(semantic, "scratchpad_write", session_id="f2", snippet=unrelated, user="u")
    second = await call(semantic, "scratchpad_write", session_id="f2", snippet=texts[1], user="u")
    assert (first["occurrences"], other["occurrences"], second["occurrences"]) == (1, 1, 2)
    third = await call(semantic, "scratchpad_write", session_id="f3", snippet=texts[2], user="u")
    assert third["occurrences"] == 3 and third["promotion"]["reason"] == "recurrence"
    assert third["notes"] == []
    key = third["promotion"]["ref"]
    assert (await call(semantic, "preferences_get", user="u", key=key))["found"]


async def test_promotion_needs_somewhere_to_go(client: Client) -> None:
    msg = await error(client, "scratchpad_write", session_id="s", snippet="x", salient=True)
    assert "`salient`" in msg
    assert (await call(client, "scratchpad_read", session_id="s"))["count"] == 0
    sid = (await call(client, "scratchpad_write", session_id="s", snippet="y"))["snippet"]["id"]
    msg = await error(client, "scratchpad_promote", session_id="s", id=sid, target="preferences")
    assert "`user`" in msg
    msg = await error(
        client, "scratchpad_promote", session_id="s", id=999, target="preferences", user="u"
    )
    assert "Not found" in msg


# ---- preferences and playbooks -------------------------------------------------------------


async def test_preferences_update_get_and_find_by_flow_and_words(client: Client) -> None:
    created = await call(
        client,
        "preferences_update",
        user="ann",
        key="response.verbosity",
        value="Short answers for the analyst persona",
        flow_id="report-flow",
    )
    assert created["status"] == "created" and created["previous_value"] is None
    updated = await call(
        client,
        "preferences_update",
        user="ann",
        key="response.verbosity",
        value="Very short answers for the analyst persona",
        flow_id="report-flow",
    )
    assert updated["status"] == "updated"
    assert updated["previous_value"] == "Short answers for the analyst persona"
    await call(client, "preferences_update", user="ann", key="units", value="Metric units always")
    in_flow = await call(
        client, "preferences_find", user="ann", situation="anything", flow_id="report-flow"
    )
    assert in_flow["mode"] == "flow"
    assert [m["preference"]["key"] for m in in_flow["matches"]] == ["response.verbosity"]
    by_words = await call(client, "preferences_find", user="ann", situation="which units?")
    assert by_words["mode"] == "keyword"
    # Two rules are few: both come back ranked, the one without the word marked weak.
    assert [(m["preference"]["key"], m["match"]) for m in by_words["matches"]] == [
        ("units", "strong"),
        ("response.verbosity", "weak"),
    ]
    missing = await call(client, "preferences_get", user="ann", key="nope")
    assert missing["found"] is False and "preferences_find" in missing["message"]


async def test_preferences_find_by_meaning(semantic: Client) -> None:
    await call(semantic, "preferences_update", user="ann", key="tone", value="formal polite tone")
    await call(semantic, "preferences_update", user="ann", key="units", value="metric units")
    found = await call(semantic, "preferences_find", user="ann", situation="metric units please")
    assert found["mode"] == "semantic"
    best = found["matches"][0]
    assert (best["preference"]["key"], best["match"]) == ("units", "strong")
    # The tone rule holds none of the situation's words: weak exactly when under the cut.
    tone = next(m for m in found["matches"] if m["preference"]["key"] == "tone")
    assert (tone["score"] >= KnowledgePolicy().preference_similarity) is (tone["match"] != "weak")


async def test_a_user_with_few_rules_gets_them_all_ranked_even_under_the_cut(
    semantic: Client,
) -> None:
    situation = "how far is it from Paris to Berlin"
    rules = {"units": "Use metric units.", "tone": "formal polite tone"}
    cut = KnowledgePolicy().preference_similarity
    assert all(fake_cosine(situation, f"{k}: {v}") < cut for k, v in rules.items())
    for key, value in rules.items():
        await call(semantic, "preferences_update", user="ann", key=key, value=value)
    found = await call(semantic, "preferences_find", user="ann", situation=situation)
    assert found["count"] == 2 and {m["match"] for m in found["matches"]} == {"weak"}
    scores = [m["score"] for m in found["matches"]]
    assert scores == sorted(scores, reverse=True)
    assert "2 rules" in found["notes"][0]
    limited = await call(semantic, "preferences_find", user="ann", situation=situation, limit=1)
    assert limited["count"] == 1


async def test_playbooks_are_banded_and_a_far_one_is_marked_weak(semantic: Client) -> None:
    query = "book a table for two at an italian restaurant tonight"
    near = "book a table for two at an italian restaurant tomorrow"
    far = "what is the weather in paris"
    assert fake_cosine(query, near) >= 0.6 > fake_cosine(query, far)
    rec = await call(
        semantic,
        "playbook_record",
        user="u1",
        flow="booking",
        user_query=query,
        slots={"party": 2, "cuisine": "italian"},
        tool_calls=[{"tool": "search_restaurants"}, {"tool": "reserve"}],
        outcome="booked",
    )
    assert rec["status"] == "created"
    dup = await call(
        semantic,
        "playbook_record",
        user="u1",
        flow="booking",
        user_query=query,
        slots={"cuisine": "italian", "party": 2},
        tool_calls=[{"tool": "search_restaurants"}, {"tool": "reserve"}],
        outcome="booked",
    )
    assert dup["status"] == "duplicate" and dup["playbook"]["id"] == rec["playbook"]["id"]
    above = await call(semantic, "playbook_find", user="u1", query=near)
    assert above["mode"] == "semantic" and above["threshold"] == 0.35
    assert [(m["playbook"]["id"], m["match"]) for m in above["matches"]] == [
        (rec["playbook"]["id"], "strong")
    ]
    assert above["matches"][0]["playbook"]["slots"] == {"party": 2, "cuisine": "italian"}
    # One playbook is few: it comes back for a far request too, marked weak and said so.
    below = await call(semantic, "playbook_find", user="u1", query=far)
    assert [m["match"] for m in below["matches"]] == ["weak"]
    assert "1 playbook, so all are ranked" in below["notes"][0]
    other_flow = await call(semantic, "playbook_find", user="u1", query=near, flow="travel")
    assert other_flow["count"] == 0 and "No playbooks recorded for flow 'travel'" in str(
        other_flow["notes"]
    )


async def test_playbook_find_with_a_flow_returns_that_flows_playbooks_exactly(
    semantic: Client,
) -> None:
    # Far from the query by meaning, but of the flow asked for: an exact lookup returns it.
    far = "what is the weather in paris"
    query = "book a table for two at an italian restaurant tonight"
    assert fake_cosine(query, far) < 0.6
    for flow, text in (("weather", far), ("booking", "reserve a hotel room in rome")):
        await call(
            semantic,
            "playbook_record",
            user="u1",
            flow=flow,
            user_query=text,
            slots={},
            tool_calls=[{"tool": flow}],
            outcome="done",
        )
    found = await call(semantic, "playbook_find", user="u1", query=query, flow="weather")
    assert found["mode"] == "flow" and found["count"] == 1
    assert found["matches"][0]["match"] == "weak"  # the flow's, however far from the query
    assert found["matches"][0]["playbook"]["user_query"] == far


async def test_a_user_never_sees_another_users_preferences_or_playbooks(client: Client) -> None:
    await call(client, "preferences_update", user="alice", key="units", value="metric units")
    await call(
        client,
        "playbook_record",
        user="alice",
        flow="f",
        user_query="export the sales report",
        slots={},
        tool_calls=[],
        outcome="done",
    )
    assert not (await call(client, "preferences_get", user="bob", key="units"))["found"]
    assert (await call(client, "preferences_find", user="bob", situation="metric units"))[
        "count"
    ] == 0
    found = await call(client, "preferences_find", user="alice", situation="metric units")
    assert [m["preference"]["key"] for m in found["matches"]] == ["units"]
    assert (await call(client, "playbook_find", user="bob", query="export the sales report"))[
        "count"
    ] == 0
    assert (await call(client, "playbook_find", user="alice", query="export the sales report"))[
        "count"
    ] == 1


# ---- business context ----------------------------------------------------------------------


async def test_ingest_is_idempotent_and_a_changed_source_replaces_its_chunks(
    client: Client,
) -> None:
    text = "Our office opens at nine.\n\nParking is in the basement."
    first = await call(client, "ingest_document", tenant="t1", source="handbook.md", text=text)
    again = await call(client, "ingest_document", tenant="t1", source="handbook.md", text=text)
    assert first["status"] == "created" and again["status"] == "unchanged"
    assert first["chunks"] == again["chunks"] == 1 and first["embedded"] is False
    changed = await call(
        client,
        "ingest_document",
        tenant="t1",
        source="handbook.md",
        text="Our office opens at ten.\n\nBikes go in the courtyard.",
    )
    assert changed["status"] == "replaced"
    assert (await call(client, "search_business_context", tenant="t1", query="basement"))[
        "count"
    ] == 0
    hits = (await call(client, "search_business_context", tenant="t1", query="courtyard"))["hits"]
    assert [(h["source"], h["position"], h["start"]) for h in hits] == [("handbook.md", 0, 0)]


async def test_document_hits_carry_their_match_strength_and_weak_ones_are_left_out(
    client: Client,
) -> None:
    # Keyword mode: the band is the share of the query's words a chunk holds, as for memories.
    for source, text in (("a.md", "Bikes go in the courtyard."), ("b.md", "Bikes stay outside.")):
        await call(client, "ingest_document", tenant="t", source=source, text=text)
    found = await call(client, "search_business_context", tenant="t", query="bikes courtyard")
    assert [(h["source"], h["match"]) for h in found["hits"]] == [
        ("a.md", "strong"),
        ("b.md", "partial"),
    ]
    weak = await call(client, "search_business_context", tenant="t", query="bikes lockers night")
    assert weak["count"] == 0 and weak["weaker"] == 2
    every = await call(
        client, "search_business_context", tenant="t", query="bikes lockers night", min_match="weak"
    )
    assert [h["match"] for h in every["hits"]] == ["weak", "weak"]
    strong = await call(
        client, "search_business_context", tenant="t", query="bikes courtyard", min_match="strong"
    )
    assert [h["source"] for h in strong["hits"]] == ["a.md"] and strong["weaker"] == 1


async def test_search_spreads_hits_across_documents(client: Client, settings: Settings) -> None:
    long_doc = "\n\n".join(
        f"Section {i}. The warranty covers parts and labour for item {i}. " + "x " * 500
        for i in range(15)
    )
    await call(client, "ingest_document", tenant="t", source="long.md", text=long_doc)
    await call(
        client,
        "ingest_document",
        tenant="t",
        source="short.md",
        text="The warranty is void if the seal is broken.",
    )
    found = await call(client, "search_business_context", tenant="t", query="warranty")
    sources = [h["source"] for h in found["hits"]]
    assert found["count"] == 10 and "short.md" in sources
    # Three per source first, then the rest of the long document fills the free slots.
    assert sources[:4].count("long.md") == 3 and sources.count("long.md") == 9
    assert found["candidates"] > 10


async def test_a_tenant_never_sees_another_tenants_documents(client: Client) -> None:
    await call(client, "ingest_document", tenant="acme", source="a.md", text="Acme secret plan")
    await call(client, "seed_tenant_from_agent_md", tenant="acme", text="# Rules\n\nBe kind.")
    assert (await call(client, "search_business_context", tenant="globex", query="secret plan"))[
        "count"
    ] == 0
    assert (await call(client, "export_agent_md", tenant="globex"))["text"] == ""
    assert (await call(client, "search_business_context", tenant="acme", query="secret plan"))[
        "count"
    ] == 1


async def test_seed_from_agent_md_and_export_round_trip(client: Client) -> None:
    agent_md = (
        "Intro text for the agent.\n\n# Tone\n\nFriendly and brief.\n\n## Products\n\n"
        "We sell bikes.\n\n## Products\n\nAnd helmets.\n"
    )
    seeded = await call(client, "seed_tenant_from_agent_md", tenant="shop", text=agent_md)
    assert [s["source"] for s in seeded["sections"]] == [
        "agent.md#intro",
        "agent.md#tone",
        "agent.md#products",
        "agent.md#products-2",
    ]
    assert seeded["created"] == 4
    again = await call(client, "seed_tenant_from_agent_md", tenant="shop", text=agent_md)
    assert again["unchanged"] == 4
    exported = (await call(client, "export_agent_md", tenant="shop"))["text"]
    copy = await call(client, "seed_tenant_from_agent_md", tenant="shop2", text=exported)
    assert [s["source"] for s in copy["sections"]] == [s["source"] for s in seeded["sections"]]
    assert (await call(client, "export_agent_md", tenant="shop2"))["text"] == exported


async def test_ingest_embeds_in_batches_and_reports_progress(semantic: Client) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    text = "\n\n".join(f"Paragraph {i} about shipping rates and customs." for i in range(20))
    result = await semantic.call_tool(
        "ingest_document",
        {"tenant": "t", "source": "rates.md", "text": text},
        progress_callback=on_progress,
    )
    out = result.structured_content
    assert out is not None and out["embedded"] is True and out["chunks"] > 2
    assert seen[0] == (0, out["chunks"])  # at once, before the model is waited for
    assert seen[-1] == (out["chunks"], out["chunks"]) and len(seen) == 1 + -(-out["chunks"] // 2)
    assert [p for p, _ in seen] == sorted({p for p, _ in seen})  # strictly increasing
    found = await call(semantic, "search_business_context", tenant="t", query="customs rates")
    assert found["mode"] == "hybrid" and found["hits"][0]["vector_rank"] is not None


async def test_unchanged_text_reports_whether_its_chunks_are_embedded(
    semantic: Client, client: Client
) -> None:
    text = "Refunds are paid within 30 days.\n\nReturns need the receipt."
    first = await call(semantic, "ingest_document", tenant="t", source="r.md", text=text)
    again = await call(semantic, "ingest_document", tenant="t", source="r.md", text=text)
    assert first["embedded"] is True
    assert again["status"] == "unchanged" and again["embedded"] is True  # was False
    # Stored by words only (a server without a model): the same text again is not embedded.
    plain = await call(client, "ingest_document", tenant="u", source="r.md", text=text)
    plain_again = await call(client, "ingest_document", tenant="u", source="r.md", text=text)
    assert plain["embedded"] is False and plain_again["embedded"] is False


async def test_bad_input_names_the_field_and_writes_nothing(client: Client) -> None:
    assert "`tenant`" in await error(
        client, "ingest_document", tenant="bad tenant!", source="a", text="hello"
    )
    assert "`text`" in await error(client, "ingest_document", tenant="t", source="a", text="  ")
    assert "`source`" in await error(client, "ingest_document", tenant="t", source=" ", text="x")
    assert (await call(client, "export_agent_md", tenant="t"))["text"] == ""
    assert "`snippet`" in await error(client, "scratchpad_write", session_id="s", snippet="")
    assert "`user`" in await error(
        client, "scratchpad_write", session_id="s", snippet="x", promote_to="preferences"
    )
    assert (await call(client, "scratchpad_read", session_id="s"))["count"] == 0
    assert "`user`" in await error(client, "preferences_update", user="", key="k", value="v")
    assert "`value`" in await error(client, "preferences_update", user="u", key="k", value=" ")
    assert not (await call(client, "preferences_get", user="u", key="k"))["found"]
    assert "`flow`" in await error(
        client,
        "playbook_record",
        user="u",
        flow="no spaces",
        user_query="q",
        slots={},
        tool_calls=[],
        outcome="o",
    )
    assert (await call(client, "playbook_find", user="u", query="q"))["count"] == 0
    assert "`query`" in await error(client, "search_business_context", tenant="t", query="?!")
    assert "`text`" in await error(client, "seed_tenant_from_agent_md", tenant="t", text="# Only")


async def test_ingest_path_reads_a_folder_with_progress(tmp_path: Path, settings: Settings) -> None:
    from memory_core.services.ingest_files import ingest_path
    from server.container import open_container

    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nAlpha text.", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("Beta text.", encoding="utf-8")
    (folder / "c.bin").write_bytes(b"\x00\x01")
    (folder / "bad.md").write_bytes(b"\xff\xfe\x00bad")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "h.md").write_text("hidden", encoding="utf-8")
    seen: list[tuple[int, int]] = []
    async with open_container(settings) as c:
        report = await ingest_path(
            c.knowledge.business, "t", folder, progress=lambda d, t: seen.append((d, t))
        )
        assert (report.files, report.created) == (2, 2)
        assert report.skipped == [("bad.md", "not UTF-8 text")]
        assert seen == [(1, 3), (2, 3), (3, 3)]
        again = await ingest_path(c.knowledge.business, "t", folder)
        assert again.unchanged == 2
        found = await c.knowledge.business.search("t", "beta")
        assert [h.chunk.source for h in found.hits] == ["sub/b.txt"]


async def test_promoting_under_a_documents_name_never_replaces_that_document(
    client: Client,
) -> None:
    await call(
        client,
        "ingest_document",
        tenant="acme",
        source="handbook.md",
        text="Deploys happen on Tuesdays after the review.",
    )
    sid = (
        await call(
            client,
            "scratchpad_write",
            session_id="s",
            snippet="Refunds need a receipt.",
            tenant="acme",
        )
    )["snippet"]["id"]
    promoted = await call(
        client,
        "scratchpad_promote",
        session_id="s",
        id=sid,
        target="business_context",
        key="handbook.md",
    )
    assert promoted["promotion"]["ref"] == "scratchpad/handbook.md"
    found = await call(client, "search_business_context", tenant="acme", query="deploys tuesdays")
    assert found["hits"][0]["source"] == "handbook.md"


# ---- review and correction (issue 18) ------------------------------------------------------


async def test_a_users_rules_and_playbooks_can_be_listed_and_deleted(client: Client) -> None:
    for key, value in (("units", "metric"), ("tone", "formal"), ("lang", "French")):
        await call(client, "preferences_update", user="ann", key=key, value=value)
    await call(client, "preferences_update", user="bob", key="units", value="imperial")
    pb = await call(
        client,
        "playbook_record",
        user="ann",
        flow="f",
        user_query="export the sales report",
        slots={"format": "csv"},
        tool_calls=[{"tool": "export"}],
        outcome="done",
    )
    listed = await call(client, "preferences_list", user="ann")
    assert [r["key"] for r in listed["rules"]] == ["lang", "tone", "units"]
    assert [p["id"] for p in listed["playbooks"]] == [pb["playbook"]["id"]]
    assert listed["playbooks"][0]["user_query"] == "export the sales report"

    one = await call(client, "preferences_delete", user="ann", keys=["units", "nope"])
    assert one["deleted_keys"] == ["units"] and one["not_found"] == ["nope"]
    assert not (await call(client, "preferences_get", user="ann", key="units"))["found"]
    assert (await call(client, "preferences_get", user="bob", key="units"))["found"]

    refused = await error(client, "preferences_delete", user="ann")
    assert "confirm" in refused
    assert len((await call(client, "preferences_list", user="ann"))["rules"]) == 2
    everything = await call(client, "preferences_delete", user="ann", confirm=True)
    assert everything["deleted_keys"] == ["lang", "tone"]
    assert everything["deleted_playbook_ids"] == [pb["playbook"]["id"]]
    empty = await call(client, "preferences_list", user="ann")
    assert empty["rules"] == [] and empty["playbooks"] == []
    assert (await call(client, "preferences_list", user="bob"))["rules"][0]["value"] == "imperial"


async def test_scratchpad_snippets_can_be_deleted_by_id_session_or_user(client: Client) -> None:
    a = await call(client, "scratchpad_write", session_id="s1", snippet="first", user="ann")
    await call(client, "scratchpad_write", session_id="s1", snippet="second", user="ann")
    await call(client, "scratchpad_write", session_id="s2", snippet="third", user="ann")
    await call(client, "scratchpad_write", session_id="s2", snippet="bob's", user="bob")
    await call(client, "scratchpad_write", session_id="s3", snippet="anonymous")
    sid = a["snippet"]["id"]
    one = await call(client, "scratchpad_delete", session_id="s1", ids=[sid, 999_999])
    assert one["ids"] == [sid] and one["not_found"] == [999_999]
    assert [
        s["snippet"] for s in (await call(client, "scratchpad_read", session_id="s1"))["snippets"]
    ] == ["second"]
    assert "confirm" in await error(client, "scratchpad_delete", session_id="s1")
    assert "confirm" in await error(client, "scratchpad_delete", user="ann")
    assert "session_id" in await error(client, "scratchpad_delete", session_id="s1", user="ann")
    users = await call(client, "scratchpad_delete", user="ann", confirm=True)
    assert users["deleted"] == 2
    left = await call(client, "scratchpad_read", session_id="s2")
    assert [s["snippet"] for s in left["snippets"]] == ["bob's"]
    whole = await call(client, "scratchpad_delete", session_id="s3", confirm=True)
    assert whole["deleted"] == 1
    assert (await call(client, "scratchpad_read", session_id="s3"))["count"] == 0


async def test_documents_can_be_listed_and_deleted_and_search_forgets_them(
    semantic: Client,
) -> None:
    await call(
        semantic,
        "ingest_document",
        tenant="acme",
        source="refunds.md",
        text="Refunds are paid within 30 days of a return.",
    )
    await call(
        semantic,
        "ingest_document",
        tenant="acme",
        source="parking.md",
        text="Parking is in the basement.",
    )
    await call(
        semantic,
        "ingest_document",
        tenant="other",
        source="refunds.md",
        text="Refunds are never paid.",
    )
    listed = await call(semantic, "list_documents", tenant="acme")
    assert [d["source"] for d in listed["documents"]] == ["refunds.md", "parking.md"]
    assert listed["documents"][0]["origin"] == "ingest" and listed["documents"][0]["chunks"] == 1
    # A search first, so this process caches the tenant's vectors; the delete must reset them.
    query = "Refunds are paid within 30 days of a return."
    hits = (await call(semantic, "search_business_context", tenant="acme", query=query))["hits"]
    assert hits[0]["source"] == "refunds.md"
    gone = await call(semantic, "delete_documents", tenant="acme", sources=["refunds.md", "x"])
    assert gone["deleted"] == ["refunds.md"] and gone["not_found"] == ["x"]
    hits = (await call(semantic, "search_business_context", tenant="acme", query=query))["hits"]
    assert all(h["source"] != "refunds.md" for h in hits)
    assert "confirm" in await error(semantic, "delete_documents", tenant="acme")
    every = await call(semantic, "delete_documents", tenant="acme", confirm=True)
    assert every["deleted"] == ["parking.md"]
    assert (await call(semantic, "list_documents", tenant="acme"))["count"] == 0
    assert (await call(semantic, "list_documents", tenant="other"))["count"] == 1


async def test_playbook_find_with_a_session_writes_the_best_playbook_into_its_scratchpad(
    client: Client,
) -> None:
    rec = await call(
        client,
        "playbook_record",
        user="ann",
        flow="booking",
        user_query="book a table for two",
        slots={"party": 2},
        tool_calls=[{"tool": "reserve"}],
        outcome="booked",
    )
    found = await call(
        client, "playbook_find", user="ann", query="anything", flow="booking", session_id="s9"
    )
    pid = rec["playbook"]["id"]
    assert found["count"] == 1 and found["scratchpad_snippet_id"] is not None
    pad = await call(client, "scratchpad_read", session_id="s9")
    assert [s["id"] for s in pad["snippets"]] == [found["scratchpad_snippet_id"]]
    note = pad["snippets"][0]
    assert note["snippet"].startswith(f"Playbook {pid} (flow booking)")
    assert '"reserve"' in note["snippet"] and "booked" in note["snippet"]
    assert note["user"] is None and note["promoted_to"] is None  # never promoted
    again = await call(
        client, "playbook_find", user="ann", query="anything", flow="booking", session_id="s9"
    )
    assert again["scratchpad_snippet_id"] == found["scratchpad_snippet_id"]  # refreshed
    none = await call(
        client, "playbook_find", user="ann", query="x", flow="travel", session_id="s10"
    )
    assert none["scratchpad_snippet_id"] is None
    assert (await call(client, "scratchpad_read", session_id="s10"))["count"] == 0


async def test_the_configured_match_bands_reach_the_knowledge_services(
    settings: Settings,
) -> None:
    """MEMSTRATA_RANKING__MATCH_* band preferences, playbooks and documents as they do memories."""
    from memory_core.config.policies import RankingPolicy
    from memory_core.domain.match import MatchThresholds
    from memory_core.domain.ranking import match_thresholds
    from server.container import open_container

    ranking = RankingPolicy(match_strong_cosine=0.7, match_partial_cosine=0.4)
    async with open_container(settings.model_copy(update={"ranking": ranking})) as c:

        def bands(m: MatchThresholds) -> tuple[float, ...]:
            return (m.strong_cosine, m.partial_cosine, m.strong_words, m.partial_words)

        expected = bands(match_thresholds(ranking))
        assert bands(c.knowledge.preferences.match) == expected
        assert bands(c.knowledge.business.match) == expected
        assert expected[:2] == (0.7, 0.4)
