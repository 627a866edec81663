"""The storage cap through the server: the prune tool's over_cap, the daily job, maintain --cap."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from mcp import Client

from memory_core.config.policies import PressurePolicy
from memory_core.domain.models import Layer
from server.cli.memory import run_maintain
from server.container import open_container
from server.scheduler import CAP_JOB, PRUNE_JOB, RECALCULATE_JOB, build_scheduler, cap_job
from server.settings import ScheduleSettings, Settings
from tests.fakes import FrozenClock
from tests.mcp_client import call


def printed(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The JSON a command printed (the test run's logs may come before it)."""
    out = "\n" + capsys.readouterr().out
    found: dict[str, Any] = json.loads(out[out.index("\n{") :])
    return found


CAP = PressurePolicy(max_memories=3, low_water=0.7)  # over 3: down to 2


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"pressure": CAP})


async def test_the_tool_previews_then_enforces(client: Client, clock: FrozenClock) -> None:
    for i in range(4):  # the fourth write is over the cap, but nothing is EXPIRED yet
        await call(client, "append", layer="episodic", content=f"surface note {i}")
    stats = await call(client, "get_memory_stats")
    assert "over_cap" in {n["code"] for n in stats["health"]}
    clock.advance(days=40)
    dry = await call(client, "prune_expired_contexts", over_cap=True, dry_run=True)
    assert dry["dry_run"] and len(dry["ids"]) == 2 and dry["deleted"] == 0
    done = await call(client, "prune_expired_contexts", over_cap=True)
    assert done["deleted"] == 2 and done["ids"] == sorted(dry["ids"])
    assert (await call(client, "get_memory_stats"))["total"] == 2
    again = await call(client, "prune_expired_contexts", over_cap=True)
    assert again["deleted"] == 0  # within the cap now


async def test_the_daily_job_runs_only_with_a_cap(settings: Settings, clock: FrozenClock) -> None:
    scheduled = settings.model_copy(update={"schedule": ScheduleSettings()})
    async with open_container(scheduled, clock) as c:
        scheduler = build_scheduler(c)
        assert scheduler is not None
        assert {RECALCULATE_JOB, PRUNE_JOB, CAP_JOB} <= {j.id for j in scheduler.get_jobs()}
        for i in range(5):
            await c.memories.append("p", Layer.EPISODIC, f"job note {i}")
        clock.advance(days=40)
        assert await cap_job(c) == 3
    uncapped = scheduled.model_copy(update={"pressure": PressurePolicy()})
    async with open_container(uncapped, clock) as c:
        scheduler = build_scheduler(c)
        assert scheduler is not None
        assert CAP_JOB not in {j.id for j in scheduler.get_jobs()}


async def test_maintain_cap(
    settings: Settings, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    async with open_container(settings, clock) as c:
        for i in range(4):
            await c.memories.append("p", Layer.EPISODIC, f"cli note {i}")
    clock.advance(days=40)
    args = argparse.Namespace(
        recalculate=False, prune=False, cap=True, limit=None, project=None, json=True
    )
    # The CLI reads the wall clock: everything written at the frozen clock's start is EXPIRED.
    assert await run_maintain(settings, argparse.Namespace(**vars(args), dry_run=True)) == 0
    preview = printed(capsys)["cap"]
    assert [(p["project"], p["would_delete"]) for p in preview] == [("p", 2)]
    assert await run_maintain(settings, argparse.Namespace(**vars(args), dry_run=False)) == 0
    assert printed(capsys)["cap"][0]["deleted"] == 2
    text = argparse.Namespace(**{**vars(args), "json": False}, dry_run=False)
    assert await run_maintain(settings, text) == 0
    assert "no project is over the storage cap" in capsys.readouterr().out
