"""Every tool through the in-memory MCP client, on a real SQLite file and on PostgreSQL."""

import json
from typing import Any

import pytest
from mcp import Client

from memory_core.config.policies import Limits
from memory_core.errors import StorageError
from memory_core.services.memories import MemoryService
from server.settings import Settings
from tests.catalog import DESTRUCTIVE_TOOLS, KNOWLEDGE_TOOLS, READ_ONLY_TOOLS, TOOL_NAMES
from tests.fakes import FrozenClock
from tests.mcp_client import call, error


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    # The whole tool suite runs on both backends, so a behaviour difference fails a test.
    if request.param == "sqlite":
        return settings
    return settings.model_copy(update={"database_url": request.getfixturevalue("pg_url")})


async def test_tools_are_listed_with_schemas_and_hints(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    for t in tools.values():
        assert t.description and t.title and t.output_schema and t.annotations
        assert t.annotations.open_world_hint is False
        # Memories and sessions live in projects; preferences, playbooks and business context
        # are scoped by the user or tenant they belong to, which those tools take instead.
        # enable_toolset changes what this server lists, in no scope of data.
        scope = "project" if t.name not in KNOWLEDGE_TOOLS else {"user", "tenant", "session_id"}
        if t.name == "enable_toolset":
            assert "project" not in t.input_schema["properties"]
        elif isinstance(scope, str):
            assert scope in t.input_schema["properties"], t.name
        else:
            assert scope & set(t.input_schema["properties"]), t.name
    for name in READ_ONLY_TOOLS:
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    for name in DESTRUCTIVE_TOOLS:
        assert tools[name].annotations.destructive_hint is True  # type: ignore[union-attr]
    layer = tools["append"].input_schema["properties"]["layer"]
    assert layer["enum"] == ["working", "episodic", "semantic", "procedural"]


async def test_append_search_and_handing_out(client: Client) -> None:
    first = await call(client, "append", layer="episodic", content="Shipped the billing API")
    again = await call(client, "append", layer="episodic", content="Shipped the billing API")
    assert first["status"] == "created" and again["status"] == "duplicate"
    assert again["id"] == first["id"]
    found = await call(client, "search", query="billing", explain=True)
    assert len(found["hits"]) == 1
    hit = found["hits"][0]
    assert hit["id"] == first["id"] and hit["signals"]["bm25_rank"] == 1
    assert hit["tier"] == "ACTIVE" and hit["score"] > 1
    await call(client, "load_context", limit=5)
    read = await client.read_resource(f"memory://test/snapshot/{first['id']}")
    # The search hit, the load, then this read.
    assert json.loads(read.contents[0].text)["access_count"] == 3  # type: ignore[union-attr]


async def test_search_reports_the_lift_a_hit_takes_from_its_session(client: Client) -> None:
    for content in ["billing deploy failed", "billing deploy rolled back", "noted for billing"]:
        await call(client, "append", layer="episodic", content=content, session_id="incident")
    await call(client, "append", layer="episodic", content="billing page copy", session_id="docs")
    found = await call(client, "search", query="billing deploy", mode="keyword", explain=True)
    lift = {h["content"]: h["signals"].get("session_lift", 0) for h in found["hits"]}
    assert lift["noted for billing"] > 0 == lift["billing page copy"]  # alone in its session


async def test_learn_recall_and_rules(client: Client) -> None:
    assert (await call(client, "learn", key="user.editor", value="vim"))["status"] == "created"
    updated = await call(client, "learn", key="user.editor", value="helix")
    assert updated["previous_value"] == "vim"
    got = await call(client, "recall", key="user.editor")
    assert got["found"] and got["value"] == "helix" and got["id"] == updated["id"]
    assert "memory" not in got  # the whole record is for `memstrata recall --json`
    await call(client, "append", layer="procedural", key="writing python", content="use ruff")
    rules = await call(client, "recall", key="writing python tests")
    assert rules["found"] is False and rules["rules"][0]["action"] == "use ruff"
    missing = await call(client, "recall", key="editor")
    assert missing["found"] is False and missing["suggestions"] == ["user.editor"]
    assert "close keys" in missing["message"]


async def test_projects_are_isolated(client: Client) -> None:
    mine = await call(client, "append", layer="episodic", content="secret plan", project="a")
    assert (await call(client, "search", query="secret", project="b"))["hits"] == []
    assert "items" not in await call(client, "load_context", project="b", layer="episodic")
    assert "No memory with id" in await error(client, "forget", id=mine["id"], project="b")
    assert (await call(client, "get_memory_stats", project="b"))["total"] == 0


async def test_stats_count_the_memories_never_read(client: Client) -> None:
    for text in ("alpha plan", "beta plan", "gamma plan"):
        await call(client, "append", layer="episodic", content=text)
    assert (await call(client, "get_memory_stats"))["never_accessed"] == 3
    assert len((await call(client, "search", query="beta", mode="keyword"))["hits"]) == 1
    await call(client, "search", query="beta", mode="keyword")  # a second read counts once
    assert (await call(client, "get_memory_stats"))["never_accessed"] == 2
    answer = await client.call_tool("get_memory_stats", {})
    assert "project test: 3 memories, 2 never read" in answer.content[0].text  # type: ignore[union-attr]


async def test_stats_recalculate_prune_compact_clear_forget(
    client: Client, clock: FrozenClock
) -> None:
    for i in range(3):
        await call(client, "append", layer="working", content=f"scratch {i}")
    clock.advance(days=31)
    keep = await call(client, "learn", key="fresh", value="fresh")
    stats = await call(client, "get_memory_stats")
    assert stats["by_tier"]["EXPIRED"] == 3 and stats["stale_tiers"] == 3
    assert {n["code"] for n in stats["health"]} >= {"prune_suggested", "stale_tiers"}
    assert (await call(client, "recalculate_memory_tiers"))["changed"] == 3
    dry = await call(client, "prune_expired_contexts", dry_run=True, limit=2)
    assert dry["deleted"] == 0 and len(dry["ids"]) == 2
    pruned = await call(client, "prune_expired_contexts", limit=2)
    assert pruned["ids"] == dry["ids"] and pruned["deleted"] == 2
    for i in range(3):
        await call(client, "append", layer="episodic", content=f"event {i}")
    compacted = await call(client, "compact", layer="episodic", keep_last=1)
    assert compacted["removed"] == 2 and len(compacted["summary_ids"]) == 1
    gone = await call(client, "forget", id=keep["id"])
    assert gone == {"id": keep["id"], "deleted": True, "content": "fresh"}
    cleared = await call(client, "clear", confirm=True)
    assert cleared["deleted"] == 3  # 1 working left, 1 event kept, 1 summary
    assert (await call(client, "get_memory_stats"))["total"] == 0


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("append", {"layer": "nope", "content": "x"}, "layer"),
        ("append", {"layer": "working", "content": "   "}, "content"),
        ("append", {"layer": "working", "content": "x" * 20_001}, "content"),
        ("append", {"layer": "semantic", "content": "x"}, "key"),
        ("append", {"layer": "working", "content": "x", "project": "bad name"}, "project"),
        ("search", {"query": "x", "limit": 0}, "limit"),
        ("search", {"query": "x", "limit": 101}, "limit"),
        ("search", {"query": "x", "since": "last tuesday"}, "since"),
        ("search", {"query": "*** --"}, "query"),
        ("recall", {}, "key"),
        ("load_context", {"limit": "ten"}, "limit"),
        ("prune_expired_contexts", {"limit": -3}, "limit"),
        ("clear", {}, "confirm"),
    ],
)
async def test_bad_input_names_the_field_and_writes_nothing(
    client: Client, tool: str, args: dict[str, Any], field: str
) -> None:
    await call(client, "learn", key="keep", value="me")
    message = await error(client, tool, **args)
    assert field in message
    assert not any(leak in message for leak in ("SELECT", "sqlite", ".db", "/tmp", "Traceback"))
    stats = await call(client, "get_memory_stats")
    assert stats["total"] == 1
    assert (await call(client, "recall", key="keep"))["value"] == "me"


async def test_unexpected_errors_reach_the_model_without_details(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("no such table: context_snapshots at /home/user/secret.db")

    monkeypatch.setattr(MemoryService, "search", boom)
    message = await error(client, "search", query="anything")
    assert message.endswith("Internal error in `search`; details are in the server log.")
    assert "secret.db" not in message and "context_snapshots" not in message


async def test_storage_errors_say_nothing_was_changed(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fail(*_: object, **__: object) -> None:
        raise StorageError("add")

    monkeypatch.setattr(MemoryService, "append", fail)
    message = await error(client, "append", layer="working", content="x")
    assert "failed during add; nothing was changed" in message


async def test_descriptions_are_dedented_for_the_model(client: Client) -> None:
    for t in (await client.list_tools()).tools:
        assert t.description is not None
        assert not any(line.startswith("    ") for line in t.description.splitlines()), t.name


async def test_argument_limits_follow_settings(settings: Settings, clock: FrozenClock) -> None:
    from server.app import build_server

    custom = settings.model_copy(update={"limits": Limits(max_limit=250, working_cap=7)})
    async with Client(build_server(custom, clock=clock)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["search"].input_schema["properties"]["limit"]["maximum"] == 250
        assert (
            "newest 7 per session"
            in tools["append"].input_schema["properties"]["layer"]["description"]
        )


async def test_author_through_append_search_and_load_context(client: Client) -> None:
    ada = await call(client, "append", layer="episodic", content="tea at noon", author="Ada")
    await call(client, "append", layer="episodic", content="tea at dusk", author="Bob")
    found = await call(client, "search", query="tea", author="Ada")
    assert [h["id"] for h in found["hits"]] == [ada["id"]]
    assert found["hits"][0]["author"] == "Ada"
    text = await client.call_tool("search", {"query": "tea"})
    assert " by Ada" in text.content[0].text and " by Bob" in text.content[0].text  # type: ignore[union-attr]
    ctx = await call(client, "load_context", limit=5, layer="episodic")
    assert {i["author"] for i in ctx["items"]} == {"Ada", "Bob"}
    assert "author" in await error(client, "append", layer="episodic", content="x", author="a\nb")


async def test_dates_through_append_many_and_search(client: Client) -> None:
    # Searched in keyword mode: the tests' server has no embedding model.
    out = await call(
        client,
        "append_many",
        items=[
            {
                "layer": "episodic",
                "content": "Caroline went to a support group yesterday",
                "occurred_at": "2023-05-08T13:56:00",
                "author": "Caroline",
            },
            {"layer": "episodic", "content": "Melanie went to a support group too"},
        ],
    )
    first = out["results"][0]["id"]
    found = await call(client, "search", query="support group in May 2023", explain=True)
    hit = found["hits"][0]
    assert hit["date"] == "2023-05-08"  # the day it was said
    assert hit["id"] == first and hit["dates"] == "2023-05-07"
    assert hit["occurred_at"].startswith("2023-05-08T13:56")
    assert hit["signals"]["date_lift"] > 0
    text = (await client.call_tool("search", {"query": "support group"})).content[0].text  # type: ignore[union-attr]
    line = next(x for x in text.splitlines() if x.startswith(f"#{first} "))
    assert " 2023-05-08 by Caroline when=2023-05-07:" in line
    bad = {"layer": "episodic", "content": "x", "occurred_at": "2999-01-01T00:00:00"}
    assert "items[0].occurred_at" in await error(client, "append_many", items=[bad])


async def test_min_match_and_the_match_word_in_the_answer(client: Client) -> None:
    await call(client, "append", layer="episodic", content="The team lunch is on Friday")
    await call(client, "append", layer="episodic", content="Lunch money")
    text = (await client.call_tool("search", {"query": "team lunch friday"})).content[0].text  # type: ignore[union-attr]
    lines = text.splitlines()
    assert " strong " in lines[1] and " weak " in lines[2]
    found = await call(client, "search", query="team lunch friday", min_match="strong")
    assert len(found["hits"]) == 1 and found["weaker"] == 1
    assert found["hits"][0]["match"] == "strong"
    nothing = await client.call_tool("search", {"query": "eat money", "min_match": "strong"})
    assert nothing.content[0].text.startswith(  # type: ignore[union-attr]
        "0 hits (keyword), 1 weaker left out by min_match: nothing relevant."
    )
    assert "min_match" in await error(client, "search", query="x", min_match="weak")


async def test_search_takes_several_phrasings_and_names_the_field_when_wrong(
    client: Client,
) -> None:
    adopt = await call(client, "append", layer="episodic", content="Caroline plans to adopt")
    agency = await call(client, "append", layer="episodic", content="The agency approved it")
    found = await call(client, "search", query="adopt", queries=["agency approved"])
    assert {h["id"] for h in found["hits"]} == {adopt["id"], agency["id"]}
    assert "query" not in found  # the caller knows what it asked
    explained = await call(client, "search", query="adopt", queries=["agency"], explain=True)
    assert explained["query"] == "adopt | agency"
    assert "queries" in await error(client, "search", queries=["a"] * 6)
    assert "query" in await error(client, "search")
