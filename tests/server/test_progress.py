"""Long tools report MCP progress to a client that asked for it (a progress token)."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT

from memory_core.services import maintenance
from tests.fakes import FrozenClock

Event = tuple[float, float | None, str | None]


def recorder() -> tuple[list[Event], ProgressFnT]:
    events: list[Event] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    return events, on_progress


async def test_prune_reports_progress_batch_by_batch(
    client: Client, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "PRUNE_BATCH", 2)
    for n in range(5):
        await client.call_tool("append", {"layer": "episodic", "content": f"old event {n}"})
    clock.advance(days=40)
    await client.call_tool("append", {"layer": "episodic", "content": "fresh event"})
    events, on_progress = recorder()

    result = await client.call_tool("prune_expired_contexts", {}, progress_callback=on_progress)

    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["deleted"] == 5
    assert [(p, t) for p, t, _ in events] == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert events[-1][2] == "pruned 5 of 5 expired memories"


async def test_compact_reports_progress_up_to_the_write(client: Client) -> None:
    for n in range(120):
        await client.call_tool(
            "append", {"layer": "episodic", "content": f"event number {n}", "session_id": "s"}
        )
    events, on_progress = recorder()

    result = await client.call_tool(
        "compact",
        {"layer": "episodic", "keep_last": 10, "session_id": "s"},
        progress_callback=on_progress,
    )

    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["removed"] == 110
    progress = [p for p, _, _ in events]
    assert progress == sorted(set(progress))  # strictly increasing, as MCP requires
    assert progress[0] == 0 and progress[-1] == 111  # 110 entries summarised, then the write
    assert {t for _, t, _ in events} == {111}
    assert len(events) == 1 + 3 + 1  # start, one per chunk of 50 (50, 50, 10), write


async def test_long_tools_work_without_a_progress_token(client: Client, clock: FrozenClock) -> None:
    await client.call_tool("append", {"layer": "episodic", "content": "old event"})
    clock.advance(days=40)
    result = await client.call_tool("prune_expired_contexts", {})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["deleted"] == 1
