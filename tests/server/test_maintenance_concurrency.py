"""Scheduled maintenance run by several servers on one file at once: each row is pruned once."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

from memory_core.domain.models import Layer, Tier
from memory_core.services import maintenance
from server.container import Container, open_container
from server.scheduler import prune_job, recalculate_job
from server.settings import ScheduleSettings, Settings
from tests.fakes import FrozenClock

SERVERS = 4
OLD, FRESH, PROJECTS = 120, 15, ("a", "b", "c")


async def test_concurrent_jobs_on_separate_connections_prune_each_row_exactly_once(
    tmp_path: Path,
):
    settings = Settings(
        db=tmp_path / "shared.db",
        schedule=ScheduleSettings(enabled=False, prune_limit=25),
        embedding_model="none",
    )
    clock = FrozenClock()
    async with AsyncExitStack() as stack:
        # One container per "process": its own connection, session lock and repository.
        servers: list[Container] = [
            await stack.enter_async_context(open_container(settings, clock)) for _ in range(SERVERS)
        ]
        for i in range(OLD):
            await servers[i % SERVERS].memories.append(PROJECTS[i % 3], Layer.EPISODIC, f"old {i}")
        clock.advance(days=31)
        fresh_ids = [
            (
                await servers[i % SERVERS].memories.append(
                    PROJECTS[i % 3], Layer.EPISODIC, f"new {i}"
                )
            ).outcome.memory.id
            for i in range(FRESH)
        ]

        # Every server runs both jobs several times at once; prune_limit forces several rounds.
        rounds = await asyncio.gather(
            *(
                job(server)
                for _ in range(4)
                for server in servers
                for job in (prune_job, recalculate_job)
            )
        )
        pruned = sum(rounds[0::2])
        assert pruned == OLD

        first = servers[0]
        for project in PROJECTS:
            stats = await maintenance.memory_stats(first.repo, clock, settings.tiers, project)
            assert stats.stats.total == FRESH // 3
            assert stats.stats.stale_tiers == 0
            assert stats.stats.by_tier[Tier.EXPIRED] == 0
        for memory_id in fresh_ids:
            assert any([await first.repo.get(p, memory_id) for p in PROJECTS])
        # A second pass finds nothing: the jobs are idempotent.
        assert await asyncio.gather(*(prune_job(s) for s in servers)) == [0] * SERVERS
        assert await asyncio.gather(*(recalculate_job(s) for s in servers)) == [0] * SERVERS
