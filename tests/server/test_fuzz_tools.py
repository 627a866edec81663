"""Hostile arguments for every tool through an in-memory MCP client (hypothesis).

Whatever arrives, a call must return a result: success, or a tool error that says what to fix.
Never an internal error (a crash the mapping did not anticipate), never SQL, a path or a
traceback, and never a change to memories of a project the call did not name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mcp import Client

from server.app import build_server
from server.settings import ScheduleSettings, Settings
from tests.catalog import TOOL_NAMES

VAULT = "vault"  # a project the fuzzer never names: its memories must survive every call
# An internal error means an input reached code that did not anticipate it; the others are
# details of the server no caller sent. (Echoes of the caller's own text are fine.)
LEAKS = ("Internal error", "Traceback", "sqlean", "OperationalError", "IntegrityError")

nasty_text = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "a\x00b",
            "🎉🧠",
            '"*^()NEAR OR AND NOT:-+',
            "'; DROP TABLE context_snapshots; --",
            "x" * 30_000,
            "\ud800",
            "SELECT * FROM meta",
        ]
    ),
)
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), nasty_text
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
any_value = st.one_of(
    json_value,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["working", "episodic", "semantic", "procedural", "hybrid", "keyword"]),
    st.sampled_from(["2026-01-01", "0001-01-01T00:00:00+14:00", "not a date", "9999-12-31"]),
)
ARG_NAMES = [
    "layer",
    "content",
    "metadata",
    "key",
    "session_id",
    "project",
    "query",
    "mode",
    "limit",
    "token_budget",
    "since",
    "until",
    "value",
    "id",
    "keep_last",
    "summarize_older",
    "confirm",
    "dry_run",
]


layers = st.sampled_from(["working", "episodic", "semantic", "procedural"])
ints = st.one_of(st.integers(-5, 200), st.integers(min_value=-(2**70), max_value=2**70))
# Well-typed arguments for each tool, filled with hostile values, so that calls get past the
# schema and into the services, where the interesting failures live.
VALID: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "append": {"layer": layers, "content": nasty_text, "key": nasty_text, "metadata": json_value},
    "search": {
        "query": nasty_text,
        "mode": st.sampled_from(["hybrid", "keyword", "semantic"]),
        "limit": ints,
        "token_budget": ints,
        "since": any_value,
    },
    "learn": {"key": nasty_text, "value": nasty_text},
    "recall": {"key": nasty_text},
    "load_context": {"limit": ints, "layer": layers, "token_budget": ints},
    "compact": {"layer": layers, "keep_last": ints, "session_id": nasty_text},
    "clear": {"confirm": st.booleans(), "layer": layers},
    "forget": {"id": ints},
    "get_memory_stats": {},
    "recalculate_memory_tiers": {},
    "prune_expired_contexts": {"dry_run": st.booleans(), "limit": ints},
}


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(sorted(TOOL_NAMES)))
    # A tool without typed strategies (added since) still gets hostile arguments of any type.
    fields = VALID.get(tool) or dict.fromkeys(ARG_NAMES, any_value)
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), unique=True)) if fields else []
    args = {name: draw(fields[name]) for name in chosen}
    if draw(st.integers(0, 3)) == 0:  # now and then, one field of any type or name
        args[draw(st.sampled_from(ARG_NAMES))] = draw(any_value)
    if draw(st.booleans()):
        args["project"] = draw(st.sampled_from(["fuzz", "other", "a/b@c"]) | nasty_text)
    return tool, args


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Client, Path]]:
    """One server for the whole fuzz run, hosted in a task of a private event loop."""
    db = Path(tmp_path_factory.mktemp("fuzz")) / "memory.db"
    config = Settings(
        db=db,
        project="fuzz",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
        toolsets="all",  # every tool answers, not just the default toolsets' ones
    )
    loop = asyncio.new_event_loop()
    ready, done = asyncio.Event(), asyncio.Event()
    box: dict[str, Client] = {}

    async def host() -> None:
        async with Client(build_server(config)) as client:
            box["client"] = client
            ready.set()
            await done.wait()

    task = loop.create_task(host())
    loop.run_until_complete(asyncio.wait_for(ready.wait(), 10))
    client = box["client"]
    for args in (
        {"layer": "semantic", "key": "vault.fact", "content": "kept", "project": VAULT},
        {"layer": "episodic", "content": "kept event", "project": VAULT},
    ):
        result = loop.run_until_complete(client.call_tool("append", args))
        assert not result.is_error
    yield loop, client, db.parent
    done.set()
    loop.run_until_complete(task)
    loop.close()


def _vault(loop: Any, client: Client) -> Any:
    result = loop.run_until_complete(client.call_tool("get_memory_stats", {"project": VAULT}))
    assert result.structured_content is not None
    return result.structured_content["total"], result.structured_content["content_bytes"]


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=tool_calls())
def test_any_arguments_get_a_result_and_leave_other_projects_alone(
    harness: tuple[Any, Client, Path], call: tuple[str, dict[str, Any]]
) -> None:
    loop, client, db_dir = harness
    tool, args = call
    assume(args.get("project") != VAULT)
    before = _vault(loop, client)
    result = loop.run_until_complete(client.call_tool(tool, args))
    if result.is_error:
        text = " ".join(getattr(block, "text", "") for block in result.content)
        assert text.strip(), (tool, args)
        assert not [leak for leak in (*LEAKS, str(db_dir)) if leak in text], (tool, args, text)
    else:
        assert result.structured_content is not None, (tool, args)
    assert _vault(loop, client) == before, (tool, args)
