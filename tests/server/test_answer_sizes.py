"""What a model receives of a tool answer is no larger than the text written for it (issue 31).

Claude Code hands the model a result's structuredContent in place of its text, so it gets the
text alone (no output schemas listed, no structured content). Other clients get structured
content shaped for a model: ids, text, layer, key, dates and match strength; ranking signals
only with `explain=true`. Measured on a realistic store (tests.answer_sizes.STORE).
"""

from __future__ import annotations

import json

import pytest

from server.settings import Settings
from tests.answer_sizes import (
    CLAUDE_CODE,
    KNOWLEDGE_CALLS,
    SEARCH,
    answer_sizes,
    fill_knowledge,
    fill_store,
    knowledge_answer_sizes,
    received_by_model,
    text_of,
)
from tests.mcp_client import hosted

# Structured content, for a client that may hand it to its model, may exceed the text answer
# by this much per answer and per line of the text (the JSON keys of a hit, a quoted "\n").
BASE_ALLOWANCE = 50
PER_LINE_ALLOWANCE = 40

SIGNALS = ("signals", "bm25_rank", "vector_distance", "tier_boost", "score")


@pytest.fixture
def shop(settings: Settings) -> Settings:
    return settings.model_copy(update={"project": "shop"})


async def test_claude_code_receives_each_text_answer_and_nothing_more(shop: Settings) -> None:
    async with hosted(shop, client_info=CLAUDE_CODE) as client:
        tools = (await client.list_tools()).tools
        assert all(t.output_schema is None for t in tools), "an output schema obliges JSON"
        await fill_store(client)
        sizes = await answer_sizes(client)
        batch = await client.call_tool(
            "append_many", {"items": [{"layer": "episodic", "content": "PayPal went live."}]}
        )
        explained = await client.call_tool("search", {"query": SEARCH, "explain": True})
    assert [s.tool for s in sizes] == ["search", "recall", "append", "learn", "load_context"]
    for size in sizes:
        assert not size.structured, size.tool
        assert size.received == size.text, size
    assert batch.structured_content is None
    assert received_by_model(batch) == text_of(batch)
    # explain=true still shows every signal, in the text.
    assert "bm25 #1" in text_of(explained) and explained.structured_content is None


async def test_other_clients_get_structured_content_about_the_size_of_the_text(
    shop: Settings,
) -> None:
    async with hosted(shop) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        await fill_store(client)
        sizes = await answer_sizes(client)
    for size in sizes:
        assert listed[size.tool].output_schema and size.structured, size.tool
        allowed = size.text + BASE_ALLOWANCE + PER_LINE_ALLOWANCE * size.lines
        print(f"{size.tool}: text {size.text}, structured {size.received}, allowed {allowed}")  # noqa: T201 - with -s
        assert size.received <= allowed, size


async def test_search_signals_come_only_with_explain(shop: Settings) -> None:
    async with hosted(shop) as client:
        await fill_store(client)
        plain = await client.call_tool("search", {"query": SEARCH, "limit": 5})
        explained = await client.call_tool("search", {"query": SEARCH, "limit": 5, "explain": True})
    sent = received_by_model(plain)
    for word in SIGNALS:
        assert word not in sent and word not in text_of(plain), word
    assert plain.structured_content is not None and explained.structured_content is not None
    hit = plain.structured_content["hits"][0]
    assert set(hit) <= {
        "id",
        "layer",
        "key",
        "content",
        "match",
        "date",
        "dates",
        "author",
        "session_id",
        "metadata",
    }
    assert {"id", "layer", "content", "match", "date"} <= set(hit)
    full = explained.structured_content["hits"][0]
    assert {"tier", "score", "signals", "created_at"} <= set(full)
    assert "bm25 #" in text_of(explained)
    assert len(received_by_model(explained)) > len(sent)  # whoever asks gets every signal


async def test_load_context_sends_the_briefing_once(shop: Settings) -> None:
    async with hosted(shop) as client:
        await fill_store(client)
        result = await client.call_tool("load_context", {})
    text = text_of(result)
    assert result.structured_content == {"project": "shop", "briefing": text}
    assert json.dumps(result.structured_content).count("Stripe signs") == 1


# ---- the knowledge tools (issue 35: one line per item, the match strength on every hit) ----

# The search-like answers: structured content's list of items, and the field of their match.
ITEMS = {
    "search_business_context": ("hits", "match"),
    "preferences_find": ("matches", "match"),
    "playbook_find": ("matches", "match"),
    "list_documents": ("documents", None),
    "preferences_list": ("rules", None),
}
# What a model cannot use, never in a text answer.
UNUSABLE = ('"start"', '"position"', "keyword_rank", "vector_rank", "score", "updated_at")


async def test_claude_code_receives_each_knowledge_text_answer_and_nothing_more(
    shop: Settings,
) -> None:
    async with hosted(shop, client_info=CLAUDE_CODE) as client:
        await fill_knowledge(client)
        sizes = await knowledge_answer_sizes(client)
    assert [s.tool for s in sizes] == [tool for tool, _ in KNOWLEDGE_CALLS]
    for size in sizes:
        assert not size.structured and size.received == size.text, size


async def test_knowledge_answers_are_one_line_per_item_with_its_match_strength(
    shop: Settings,
) -> None:
    async with hosted(shop) as client:
        await fill_knowledge(client)
        results = {tool: await client.call_tool(tool, args) for tool, args in KNOWLEDGE_CALLS}
    for tool, result in results.items():
        text, data = text_of(result), result.structured_content
        assert data is not None and not result.is_error, tool
        # Shorter than the compact JSON these tools answered in before (issue 35: 2,862
        # bytes for 4 document hits, every chunk's offsets).
        assert len(text) < len(received_by_model(result)), tool
        for word in UNUSABLE:
            assert word not in text, (tool, word)
        if tool not in ITEMS:
            continue
        field, match = ITEMS[tool]
        items = data[field] + data.get("playbooks", [])
        # A header, one line per item (its continuation lines indented), then the notes.
        lines = [line for line in text.splitlines() if not line.startswith("  ")]
        assert len(lines) == 1 + len(items) + len(data.get("notes", [])), text
        if match is not None:
            for line, item in zip(lines[1:], items, strict=False):
                assert f" {item[match]}" in line.split(":")[0], line
    assert "arrived damaged" in text_of(results["search_business_context"])
    assert results["search_business_context"].structured_content["hits"][0]["start"] == 0
    # The recipe a model follows: request, outcome, slots and calls, on the playbook's line.
    assert '"refunds.create"' in text_of(results["playbook_find"]).splitlines()[1]


async def test_a_document_search_that_matches_nothing_says_so(shop: Settings) -> None:
    async with hosted(shop) as client:
        await fill_knowledge(client)
        args = {"tenant": "shop", "query": "what is the capital of australia"}
        none = await client.call_tool("search_business_context", args)
    assert text_of(none).splitlines()[0] == "0 chunks of shop (keyword): nothing matched."
