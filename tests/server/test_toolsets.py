"""Toolsets, compact schemas and compact answers: what a model pays for on every turn."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from mcp import Client

from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from server.app import TOOL_MODULES, build_server
from server.container import open_container
from server.protocol.surface import MemstrataServer, compact_schema, model_visible_definition
from server.settings import Settings
from server.tools import split_doc
from server.toolsets import DEFAULT_TOOLSETS, Toolset, parse_toolsets
from tests.catalog import DEFAULT_TOOLS, TOOL_NAMES
from tests.mcp_client import call, error, hosted

# The default surface's budget (issue 17): model-visible definitions of the listed tools.
MAX_DEFAULT_TOKENS = 3_500
MAX_DEFAULT_TOOLS = 12
# A search answer's text may be at most this multiple of the memory text it carries, plus
# this many characters per hit for the hit line's id, layer, tier, match word and date.
MAX_ANSWER_RATIO = 2.5
PER_HIT_ALLOWANCE = 80


def default_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"toolsets": ",".join(sorted(DEFAULT_TOOLSETS))})


async def test_the_default_surface_fits_its_budget(settings: Settings) -> None:
    counter = WordPieceTokenCounter()
    async with hosted(default_settings(settings)) as client:
        tools = (await client.list_tools()).tools
    costs = {t.name: counter.count(model_visible_definition(t)) for t in tools}
    total = sum(costs.values())
    print(f"default toolsets: {len(tools)} tools, {total} tokens: {costs}")  # noqa: T201 - the figures, with -s
    assert {t.name for t in tools} == DEFAULT_TOOLS
    assert len(tools) <= MAX_DEFAULT_TOOLS, f"{len(tools)} tools listed by default"
    assert total <= MAX_DEFAULT_TOKENS, f"default surface costs {total} tokens: {costs}"


async def test_every_toolset_lists_every_tool(settings: Settings) -> None:
    async with hosted(settings) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == TOOL_NAMES


async def test_a_tool_outside_the_enabled_toolsets_is_refused_with_the_way_in(
    settings: Settings,
) -> None:
    async with hosted(default_settings(settings)) as client:
        text = await error(client, "start_session")
        assert "`conversations` toolset" in text and "enable_toolset" in text
        assert "MEMSTRATA_TOOLSETS" in text


async def test_enable_toolset_lists_the_new_tools(settings: Settings) -> None:
    # The list_changed notification a stdio client hears is tested over the wire in
    # tests/e2e/test_toolsets_stdio.py.
    server = build_server(default_settings(settings))
    async with Client(server) as client:
        done = await client.call_tool("enable_toolset", {"toolset": "conversations"})
        assert not done.is_error
        assert "start_session" in done.content[0].text  # type: ignore[union-attr]
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == DEFAULT_TOOLS | set(server.tools_in(Toolset.CONVERSATIONS))
        started = await client.call_tool("start_session", {})
        assert not started.is_error
        again = await client.call_tool("enable_toolset", {"toolset": "conversations"})
        assert "Already enabled" in again.content[0].text  # type: ignore[union-attr]
        every = await client.call_tool("enable_toolset", {"toolset": "all"})
        assert "append_many" in every.content[0].text  # type: ignore[union-attr]
        assert {t.name for t in (await client.list_tools()).tools} == TOOL_NAMES


async def test_http_servers_have_no_runtime_toolsets(settings: Settings) -> None:
    async with hosted(default_settings(settings), runtime_toolsets=False) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == DEFAULT_TOOLS - {"enable_toolset"}


def test_toolset_names_are_checked_with_the_valid_ones_in_the_message() -> None:
    assert parse_toolsets("core, Conversations") == {Toolset.CORE, Toolset.CONVERSATIONS}
    assert parse_toolsets("all") == frozenset(Toolset)
    with pytest.raises(ValueError, match=r"unknown toolset 'chat'.*core, maintenance"):
        parse_toolsets("core,chat")
    with pytest.raises(ValueError, match="no toolset named"):
        parse_toolsets(" , ")
    with pytest.raises(ValueError, match="unknown toolset"):
        Settings(toolsets="everything")


def test_compact_schema_drops_padding_but_keeps_meaning() -> None:
    schema = {
        "title": "searchArguments",
        "type": "object",
        "$defs": {"JsonValue": {}},
        "properties": {
            "title": {"title": "Title", "type": "string", "description": "A field named title."},
            "since": {
                "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
                "default": None,
                "description": "From when.",
                "title": "Since",
            },
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}], "title": "Either"},
            "meta": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/JsonValue"}},
                    {"type": "null"},
                ],
                "default": None,
            },
            "limit": {"type": "integer", "default": 10, "maximum": 100},
        },
        "required": ["title"],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "A field named title."},
            "since": {"type": "string", "format": "date-time", "description": "From when."},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "meta": {"type": "object"},
            "limit": {"type": "integer", "default": 10, "maximum": 100},
        },
        "required": ["title"],
    }


async def test_the_published_schemas_still_accept_what_the_tools_accept(
    settings: Settings,
) -> None:
    async with hosted(settings) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        search = tools["search"].input_schema
        assert "title" not in search and "title" not in search["properties"]["query"]
        assert search["properties"]["layer"]["enum"][0] == "working"
        # Null is still accepted by the server for an optional argument a client fills.
        found = await call(client, "search", query="anything", layer=None)
        assert found["hits"] == []


def test_docstring_details_go_to_the_docs_not_to_the_model() -> None:
    head, details = split_doc(
        """Do the thing.

        Use it when X.

        Details:
        How it ranks, in depth.
        """
    )
    assert head == "Do the thing.\n\nUse it when X."
    assert details == "How it ranks, in depth."
    assert split_doc("Just this.") == ("Just this.", "")


async def test_descriptions_sent_carry_no_details_and_the_details_are_kept(
    settings: Settings,
) -> None:
    server = build_server(settings)
    tools = {t.name: t for t in await server.list_tools()}
    assert "Details:" not in (tools["search"].description or "")
    assert "signals" in server.tool_details["search"]


async def test_a_ten_hit_search_answer_is_mostly_memory_text(settings: Settings) -> None:
    contents = [
        f"Note {i}: the billing service deploys on Tuesdays after review" for i in range(10)
    ]
    async with hosted(settings) as client:
        for content in contents:
            await call(client, "append", layer="episodic", content=content)
        result = await client.call_tool("search", {"query": "billing deploys", "limit": 10})
    text = result.content[0].text  # type: ignore[union-attr]
    memory_chars = sum(len(c) for c in contents)
    allowed = MAX_ANSWER_RATIO * memory_chars + PER_HIT_ALLOWANCE * len(contents)
    structured = json.dumps(result.structured_content)
    print(  # noqa: T201 - the figures, with -s
        f"search answer: text {len(text)} chars, structured {len(structured)} chars, "
        f"memory text {memory_chars} chars, allowed {allowed:.0f}"
    )
    assert result.structured_content is not None and len(result.structured_content["hits"]) == 10
    assert all(c in text for c in contents)
    assert len(text) <= allowed
    assert "signals" not in text and "bm25" not in text
    assert "\n  " not in text  # one line per hit, no indentation


async def test_explain_adds_the_signals_to_the_text(settings: Settings) -> None:
    async with hosted(settings) as client:
        await call(client, "append", layer="episodic", content="billing deploy failed")
        plain = await client.call_tool("search", {"query": "billing"})
        explained = await client.call_tool("search", {"query": "billing", "explain": True})
    plain_text = plain.content[0].text  # type: ignore[union-attr]
    explained_text = explained.content[0].text  # type: ignore[union-attr]
    assert "bm25 #1" in explained_text and "score" in explained_text
    assert "bm25" not in plain_text
    assert plain.structured_content is not None and explained.structured_content is not None
    assert "signals" not in plain.structured_content["hits"][0]
    assert explained.structured_content["hits"][0]["signals"]["bm25_rank"] == 1


async def test_answers_are_compact_text_beside_a_sparse_structured_object(
    settings: Settings,
) -> None:
    async with hosted(settings) as client:
        first = await client.call_tool(
            "append", {"layer": "episodic", "content": "Deployed v1.2", "metadata": {"by": "ci"}}
        )
        assert first.content[0].text == "#1 episodic created"  # type: ignore[union-attr]
        assert first.structured_content is not None
        assert first.structured_content == {
            "id": 1,
            "project": "test",
            "layer": "episodic",
            "status": "created",
        }  # no `"key": null`, `"trimmed": 0`: the output schema gives the defaults
        await call(client, "append", layer="procedural", key="deploying", content="Run tests")
        await call(client, "learn", key="user.lang", value="Python")
        learned = await client.call_tool("learn", {"key": "user.lang", "value": "Rust"})
        assert learned.content[0].text == "user.lang: #3 updated; was: Python"  # type: ignore[union-attr]
        recalled = await client.call_tool("recall", {"key": "user.lang"})
        assert recalled.content[0].text.startswith("user.lang = Rust")  # type: ignore[union-attr]
        context = await client.call_tool("load_context", {"limit": 5, "layer": "episodic"})
        lines = context.content[0].text.splitlines()  # type: ignore[union-attr]
        assert lines[0] == "1 memories of project test:"
        assert lines[1].startswith("#1 episodic ACTIVE 20")
        assert lines[1].endswith(' {"by":"ci"}: Deployed v1.2')
        stats = await client.call_tool("get_memory_stats", {})
        assert "project test: 3 memories" in stats.content[0].text  # type: ignore[union-attr]
        # A tool without its own rendering answers with one line of JSON, empty fields left out.
        started = await client.call_tool("start_session", {})
        assert started.content[0].text.startswith("session ")  # type: ignore[union-attr]
        session_id = started.structured_content["session_id"]
        counted = await client.call_tool("get_session_stats", {"session_id": session_id})
        text = counted.content[0].text  # type: ignore[union-attr]
        assert "\n" not in text and ": null" not in text and '":null' not in text
        assert json.loads(text)["session_id"] == session_id


def test_memstrata_tools_prints_every_toolset_with_its_cost(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from server.cli.commands import main

    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("MEMSTRATA_TOOLSETS", "core,maintenance")
    with pytest.raises(SystemExit) as exit_:
        main(["tools", "--json"])
    assert exit_.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["enabled"] == ["core", "maintenance"] and report["listed_tools"] == 12
    groups = {g["toolset"]: g for g in report["toolsets"]}
    assert set(groups) == {t.value for t in Toolset}
    assert {t["name"] for t in groups["core"]["tools"]} == DEFAULT_TOOLS - {
        "get_memory_stats",
        "recalculate_memory_tiers",
        "prune_expired_contexts",
        "compact",
        "clear",
    }
    assert report["listed_tokens"] == groups["core"]["tokens"] + groups["maintenance"]["tokens"]
    assert report["listed_tokens"] <= MAX_DEFAULT_TOKENS
    with pytest.raises(SystemExit):
        main(["tools"])
    table = capsys.readouterr().out
    assert "conversations (not listed; 15 tools" in table and "listed now: 12 tools" in table
    assert not (tmp_path / "memory.db").exists()  # listing tools opens no database


async def test_load_context_without_a_layer_answers_with_the_session_start_briefing(
    settings: Settings,
) -> None:
    async with hosted(settings) as client:
        await call(client, "append", layer="procedural", key="deploying", content="Run tests")
        await call(client, "learn", key="user.lang", value="Python")
        result = await client.call_tool("load_context", {})
        prompt = await client.get_prompt("memory_briefing", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("<memstrata-memory>\nMemory of project test, saved by earlier")
    assert text.index("when deploying: Run tests") < text.index("user.lang: Python")
    assert result.structured_content == {"project": "test", "briefing": text}
    assert prompt.messages[0].content.text == text  # type: ignore[union-attr]


async def test_the_briefing_honours_limit_and_counts_what_it_shows_as_used(
    settings: Settings,
) -> None:
    """Issue 35, N1: `limit` bounds the briefing too, and what it shows is recorded as used."""
    async with hosted(settings) as client:
        await call(client, "append", layer="procedural", key="deploying", content="Run tests")
        for n in range(8):
            await call(client, "append", layer="episodic", content=f"Finding number {n} noted")
        result = await client.call_tool("load_context", {"limit": 3})
    text = result.content[0].text  # type: ignore[union-attr]
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(lines) == 3 and "when deploying: Run tests" in lines[0]
    async with open_container(settings) as c:
        rows = [await c.memories.repo.get("test", n) for n in range(1, 10)]
    used = {m.content for m in rows if m is not None and m.access_count > 0}
    assert "Run tests" in used
    assert sum(1 for line in lines if any(content in line for content in used)) == 3


async def test_the_briefing_of_an_empty_project_says_so(settings: Settings) -> None:
    async with hosted(settings) as client:
        result = await client.call_tool("load_context", {})
        prompt = await client.get_prompt("memory_briefing", {"project": "empty"})
    assert result.content[0].text == "0 memories of project test; nothing stored yet."  # type: ignore[union-attr]
    assert "no memories in project 'empty'" in prompt.messages[0].content.text  # type: ignore[union-attr]


def _visible(tools: list[Any]) -> list[tuple[str, str, Any, Any]]:
    return [(t.name, t.description, t.input_schema, t.output_schema) for t in tools]


async def test_enabling_every_toolset_lists_what_an_all_toolsets_start_lists(
    settings: Settings,
) -> None:
    # Tools of disabled toolsets are built when enabled (issue 21); the client cannot tell:
    # same tools, same order, same descriptions and schemas as a server started with all.
    eager = build_server(settings)
    every = await eager.list_tools()
    late = build_server(default_settings(settings))
    assert [t.name for t in await late.list_tools()] == [
        t.name for t in every if t.name in DEFAULT_TOOLS
    ]
    late.enable(parse_toolsets("all"))
    assert _visible(await late.list_tools()) == _visible(every)
    assert late.toolset_of == eager.toolset_of
    assert list(late.toolset_of) == list(eager.toolset_of)


async def test_only_the_enabled_toolsets_tools_are_built_at_start(settings: Settings) -> None:
    server = build_server(default_settings(settings))
    built = {t.name for t in server._tool_manager.list_tools()}
    assert built == DEFAULT_TOOLS
    assert server.enable([Toolset.CONVERSATIONS]) == sorted(server.tools_in(Toolset.CONVERSATIONS))
    built = {t.name for t in server._tool_manager.list_tools()}
    assert built == DEFAULT_TOOLS | set(server.tools_in(Toolset.CONVERSATIONS))
    # Names of tools not built yet are known, so a call is refused with the way in.
    assert server.toolset_of["preferences_find"] is Toolset.PREFERENCES
    assert "preferences_find" not in built


@pytest.mark.parametrize(("module", "served"), TOOL_MODULES)
def test_each_tool_module_registers_only_the_toolsets_it_is_listed_for(
    settings: Settings, module: str, served: frozenset[Toolset]
) -> None:
    # build_server imports a module only when one of its listed toolsets is enabled; a tool
    # of an unlisted toolset would be missing after enable_toolset.
    server = MemstrataServer("t", toolsets=[])
    importlib.import_module(f"server.tools.{module}").register(server, settings)
    assert server.toolset_of
    assert set(server.toolset_of.values()) <= served


def test_the_tool_modules_cover_every_tool(settings: Settings) -> None:
    server = build_server(default_settings(settings))
    assert set(server.toolset_of) == TOOL_NAMES
