"""A client playing the model's part: it follows the server's instructions across two sessions.

Session one reads `instructions` from the initialize result and does what they say: it loads
context at the start of the task, searches before answering, and stores what it learned at the
end. Session two is a NEW server process on the same database file, and the memory is there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import ok, stdio_server

pytestmark = pytest.mark.e2e

FACT_KEY = "project.test_command"
FACT = "Run `make test` before every push; CI mirrors it."
EVENT = "Fixed the flaky login test by freezing the clock in the session fixture."


def tools_named_in(instructions: str) -> list[str]:
    """The tool names the instructions mention, in the order they first appear."""
    seen: list[str] = []
    for name in re.findall(r"`([a-z_]+)`", instructions):
        if name not in seen:
            seen.append(name)
    return seen


async def test_a_client_following_the_instructions_finds_its_memory_next_time(
    db_path: Path, tmp_path: Path
):
    async with stdio_server(db_path, tmp_path / "first.log") as client:
        instructions = client.instructions
        assert instructions, "the server sent no instructions"
        named = tools_named_in(instructions)
        # The instructions tell the model what to do first, before answering, and at the end.
        assert named[:3] == ["load_context", "search", "recall"], named
        assert {"learn", "append"} <= set(named)
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert set(named) <= listed | {"project"}, "the instructions name a tool that is missing"

        # "At the start of a task, call `load_context`": a new store has nothing yet.
        start = ok(await client.call_tool("load_context", {"limit": 10}))
        assert "briefing" not in start and "items" not in start
        # "Before answering from memory, call `search`": nothing is known yet either.
        before = ok(await client.call_tool("search", {"query": "how do I run the tests"}))
        assert before["hits"] == []
        # "When you learn something durable, store it": a fact and an event.
        learned = ok(await client.call_tool("learn", {"key": FACT_KEY, "value": FACT}))
        assert learned["status"] == "created"
        stored = ok(await client.call_tool("append", {"layer": "episodic", "content": EVENT}))
        assert stored["status"] == "created"

    # A new process (a new conversation) on the same database file.
    async with stdio_server(db_path, tmp_path / "second.log") as client:
        assert client.instructions == instructions
        context = ok(await client.call_tool("load_context", {"limit": 10}))
        assert FACT in context["briefing"] and EVENT in context["briefing"]
        found = ok(
            await client.call_tool(
                "search", {"query": "flaky login test", "mode": "keyword", "limit": 5}
            )
        )
        assert found["hits"][0]["content"] == EVENT
        recalled = ok(await client.call_tool("recall", {"key": FACT_KEY}))
        assert recalled["found"] is True and recalled["value"] == FACT

        # Long tools report progress over the real JSON-RPC transport when asked to.
        events: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append((progress, total))

        compacted = ok(
            await client.call_tool(
                "compact", {"layer": "episodic", "keep_last": 0}, progress_callback=on_progress
            )
        )
        assert compacted["removed"] == 1
        assert events and events[-1] == (2, 2)
