"""Contract tests of the knowledge ports (scratchpad, preferences, playbooks, documents).

Parametrized over both backends by the `storage` fixture, so a difference between the SQLite
and PostgreSQL stores fails one of the two runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memory_core.domain.knowledge import (
    ChunkDraft,
    DocumentDraft,
    DocumentOrigin,
    PlaybookDraft,
    PreferenceDraft,
    PromotionReason,
    PromotionTarget,
    SnippetDraft,
)
from memory_core.domain.similarity import normalised_hash
from tests.backends import StorageUnderTest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MODEL = "test-model"
REASON = PromotionReason.EXPLICIT


def doc_draft(
    tenant: str, source: str, text: str, chunks: Sequence[ChunkDraft], origin: DocumentOrigin
) -> DocumentDraft:
    return DocumentDraft(
        tenant=tenant, source=source, origin=origin, text=text, chunks=tuple(chunks)
    )


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def snippet(session: str, text: str, user: str | None = None) -> SnippetDraft:
    return SnippetDraft(
        session_id=session,
        text=text,
        norm_hash=normalised_hash(text),
        user=user,
        tenant=None,
        salient=False,
        promote_to=None,
    )


def rule(user: str, key: str, value: str, flow_id: str | None = None) -> PreferenceDraft:
    return PreferenceDraft(user=user, key=key, value=value, flow_id=flow_id, origin="client")


def playbook(user: str, flow: str, query: str) -> PlaybookDraft:
    return PlaybookDraft(
        user=user,
        flow=flow,
        user_query=query,
        slots={"n": 1},
        tool_calls=[{"tool": "t"}],
        outcome="done",
        record_hash=f"{user}/{flow}/{query}",
    )


async def test_preferences_upsert_list_and_delete_by_key_or_all(storage: StorageUnderTest) -> None:
    store = storage.preferences()
    for key in ("units", "tone", "lang"):
        await store.upsert(rule("ann", key, f"{key} rule"), unit(1, 0), MODEL, T0)
    await store.upsert(rule("bob", "units", "imperial"), None, None, T0)
    stored, previous = await store.upsert(
        rule("ann", "units", "metric", "f1"), None, None, T0 + timedelta(hours=1)
    )
    assert previous == "units rule" and stored.value == "metric" and stored.flow_id == "f1"
    listed = await store.list_user("ann", MODEL)
    assert [p.key for p, _ in listed] == ["lang", "tone", "units"]
    assert [v is not None for _, v in listed] == [True, True, False]  # replaced without one
    assert await store.delete("ann", ["units", "missing"]) == ["units"]
    assert await store.get("ann", "units") is None
    assert await store.delete("ann", None) == ["lang", "tone"]
    assert await store.list_user("ann", None) == []
    bob = await store.get("bob", "units")
    assert bob is not None and bob.value == "imperial"


async def test_playbooks_dedupe_filter_by_flow_and_delete(storage: StorageUnderTest) -> None:
    store = storage.playbooks()
    a, created = await store.add(playbook("ann", "booking", "book a table"), None, None, T0)
    again, second = await store.add(playbook("ann", "booking", "book a table"), None, None, T0)
    b, _ = await store.add(playbook("ann", "weather", "rain tomorrow?"), unit(0, 1), MODEL, T0)
    c, _ = await store.add(playbook("bob", "booking", "book a table"), None, None, T0)
    assert created and not second and again.id == a.id
    assert [p.id for p, _ in await store.list_user("ann", "booking", None)] == [a.id]
    assert [p.id for p, _ in await store.list_user("ann", None, MODEL)] == [a.id, b.id]
    assert await store.delete("ann", [b.id, c.id]) == [b.id]  # bob's id is not ann's
    assert await store.delete("ann", None) == [a.id]
    assert [p.id for p, _ in await store.list_user("bob", None, None)] == [c.id]


async def test_scratchpad_delete_by_ids_session_or_user(storage: StorageUnderTest) -> None:
    store = storage.scratchpad()
    s1a = (await store.write(snippet("s1", "one", "ann"), None, None, T0, cap=10)).snippet
    s1b = (await store.write(snippet("s1", "two", "ann"), None, None, T0, cap=10)).snippet
    s2a = (await store.write(snippet("s2", "three", "ann"), None, None, T0, cap=10)).snippet
    s2b = (await store.write(snippet("s2", "four", "bob"), None, None, T0, cap=10)).snippet
    s3 = (await store.write(snippet("s3", "five"), None, None, T0, cap=10)).snippet
    assert await store.delete(session_id="s1", user=None, ids=[s1a.id, s2a.id]) == [s1a.id]
    assert [s.id for s in await store.read("s1", None, T0)] == [s1b.id]
    assert await store.delete(session_id=None, user="ann", ids=None) == [s1b.id, s2a.id]
    assert [s.id for s in await store.read("s2", None, T0)] == [s2b.id]
    assert await store.delete(session_id="s3", user=None, ids=None) == [s3.id]
    assert await store.read("s3", None, T0) == []


async def test_documents_delete_by_source_or_all_and_forget_their_vectors(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    chunk = [ChunkDraft(position=0, start=0, end=4, text="text")]
    for source, vector in (("a.md", unit(1, 0)), ("b.md", unit(0, 1))):
        draft = doc_draft("acme", source, "text", chunk, DocumentOrigin.INGEST)
        await store.put_document(draft, vector.reshape(1, -1), MODEL, T0)
    await store.put_document(
        doc_draft("other", "a.md", "text", chunk, DocumentOrigin.INGEST), None, None, T0
    )
    listed = await store.documents("acme", None)
    assert [d.source for d, _ in listed] == ["a.md", "b.md"]
    near = await store.vector_candidates("acme", unit(1, 0), MODEL, limit=5)  # caches vectors
    assert len(near) == 2
    assert await store.delete_documents("acme", ["a.md", "zzz"]) == ["a.md"]
    assert await store.get_document("acme", "a.md") is None
    near = await store.vector_candidates("acme", unit(1, 0), MODEL, limit=5)
    assert len(near) == 1  # the cached matrix was reloaded: a.md's chunk is gone
    assert await store.keyword_candidates("acme", '"text"', limit=5) == [near[0][0]]
    assert await store.delete_documents("acme", None) == ["b.md"]
    assert await store.documents("acme", None) == []
    assert [d.source for d, _ in await store.documents("other", None)] == ["a.md"]


async def test_scratchpad_write_refreshes_the_same_text_and_evicts_the_least_recently_used(
    storage: StorageUnderTest,
) -> None:
    store = storage.scratchpad()
    t = [T0 + timedelta(minutes=i) for i in range(6)]
    one = await store.write(snippet("s", "one", "ann"), unit(1, 0), MODEL, t[0], cap=2)
    two = await store.write(snippet("s", "two", "ann"), None, None, t[1], cap=2)
    again = await store.write(snippet("s", "one", "ann"), None, None, t[2], cap=2)
    assert one.created and two.created and one.evicted == [] and two.evicted == []
    assert not again.created and again.snippet.id == one.snippet.id and again.evicted == []
    # "two" is now the least recently used: a third snippet evicts it, not "one".
    three = await store.write(snippet("s", "three", "ann"), None, None, t[3], cap=2)
    assert [s.id for s in three.evicted] == [two.snippet.id]
    assert [s.text for s in await store.read("s", None, t[4])] == ["three", "one"]
    # Reading one snippet makes exactly it the most recently used; get marks nothing.
    assert [s.text for s in await store.read("s", [one.snippet.id], t[5])] == ["one"]
    assert [s.text for s in await store.read("s", None, t[5])] == ["one", "three"]
    got = await store.get("s", one.snippet.id)
    assert got is not None and got.last_used_at == t[5]
    assert await store.get("other", one.snippet.id) is None  # another session's id


async def test_scratchpad_peers_carry_the_vector_of_the_asked_model_and_promotions(
    storage: StorageUnderTest,
) -> None:
    store = storage.scratchpad()
    mine = (await store.write(snippet("s1", "a", "ann"), unit(1, 0), MODEL, T0, cap=5)).snippet
    other = (await store.write(snippet("s2", "b", "ann"), unit(0, 1), "old", T0, cap=5)).snippet
    await store.write(snippet("s3", "c", "bob"), None, None, T0, cap=5)
    peers = {s.id: v for s, v in await store.peers("ann", None, MODEL)}
    assert set(peers) == {mine.id, other.id}
    assert peers[other.id] is None  # embedded by another model
    mine_vector = peers[mine.id]
    assert mine_vector is not None and np.allclose(mine_vector, unit(1, 0))
    await store.mark_promoted([mine.id], PromotionTarget.PREFERENCES, "units", REASON, T0)
    marked = await store.get("s1", mine.id)
    assert marked is not None and marked.promoted_to == PromotionTarget.PREFERENCES


async def test_preference_and_playbook_vectors_are_stored_later_under_a_model(
    storage: StorageUnderTest,
) -> None:
    preferences, playbooks = storage.preferences(), storage.playbooks()
    pref, _ = await preferences.upsert(rule("ann", "units", "metric"), None, None, T0)
    book, _ = await playbooks.add(playbook("ann", "f", "q"), None, None, T0)
    await preferences.set_vectors([(pref.id, unit(1, 0))], MODEL)
    await playbooks.set_vectors([(book.id, unit(0, 1))], MODEL)
    [(_, rule_vector)] = await preferences.list_user("ann", MODEL)
    [(_, book_vector)] = await playbooks.list_user("ann", None, MODEL)
    assert rule_vector is not None and np.allclose(rule_vector, unit(1, 0))
    assert book_vector is not None and np.allclose(book_vector, unit(0, 1))
    assert [v for _, v in await preferences.list_user("ann", "another-model")] == [None]


async def test_a_document_is_created_left_alone_when_unchanged_and_replaced_with_its_chunks(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    first = [
        ChunkDraft(position=0, start=0, end=5, text="alpha"),
        ChunkDraft(position=1, start=6, end=10, text="beta"),
    ]
    vectors = np.stack([unit(1, 0), unit(0, 1)])

    async def put(text: str, chunks: list[ChunkDraft], vecs: np.ndarray | None) -> str:
        origin = DocumentOrigin.INGEST
        draft = doc_draft("acme", "a.md", text, chunks, origin)
        written = await store.put_document(draft, vecs, MODEL if vecs is not None else None, T0)
        return written.status

    assert await put("alpha beta", first, vectors) == "created"
    doc = await store.get_document("acme", "a.md")
    assert doc is not None and await store.embedded_chunks(doc.id, MODEL) == 2
    assert await store.embedded_chunks(doc.id, "another-model") == 0
    near = await store.vector_candidates("acme", unit(0, 1), MODEL, limit=5)
    ids = [i for i, _ in near]
    assert [c.text for c in await store.chunks("acme", ids)] == ["beta", "alpha"]
    assert [c.text for c in await store.chunks("other", ids)] == []  # another tenant's ids
    assert await put("alpha beta", first, vectors) == "unchanged"
    second = [ChunkDraft(position=0, start=0, end=5, text="gamma")]
    assert await put("gamma", second, None) == "replaced"
    assert await store.keyword_candidates("acme", '"alpha"', limit=5) == []
    [gamma] = await store.keyword_candidates("acme", '"gamma"', limit=5)
    assert [c.text for c in await store.chunks("acme", [gamma])] == ["gamma"]
    # The old chunks are gone (SQLite may hand their ids to new rows; PostgreSQL does not).
    assert {c.text for c in await store.chunks("acme", ids)} <= {"gamma"}
    [(record, text)] = await store.documents("acme", [DocumentOrigin.INGEST])
    assert record.source == "a.md" and text == "gamma"
    assert await store.documents("acme", [DocumentOrigin.AGENT_MD]) == []
