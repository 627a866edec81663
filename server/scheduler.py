"""Scheduled maintenance: APScheduler 3 jobs that call the same services as the tools.

APScheduler 3 is untyped; its use stays in this module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memory_core.storage.sqlite.leases import LocalJobLeases
from server.container import Container
from server.cron import parse_cron

__all__ = ["build_scheduler", "once_per_schedule", "prune_job", "recalculate_job"]

log = structlog.get_logger(__name__)

RECALCULATE_JOB = "recalculate_tiers"
PRUNE_JOB = "prune_expired"


async def recalculate_job(container: Container) -> int:
    """Recalculate tiers across all projects."""
    changed = await container.maintenance.recalculate_tiers(None)
    log.info("job.ran", job=RECALCULATE_JOB, changed=changed)
    return changed


async def prune_job(container: Container) -> int:
    """Prune EXPIRED memories across all projects, up to the configured limit."""
    outcome = await container.maintenance.prune_expired(
        project=None,
        limit=container.settings.schedule.prune_limit,
    )
    log.info("job.ran", job=PRUNE_JOB, deleted=len(outcome.ids))
    return len(outcome.ids)


MISFIRE_GRACE_S = 3600


def schedule_slot(trigger: Any, now: datetime) -> datetime:
    """The newest fire time of `trigger` at or before `now`: the slot a late run belongs to.

    Replicas whose timers fire a little apart agree on it, so they can tell "this slot already
    ran" from "a new slot". Looks back as far as a run may be late (the misfire grace).
    """
    slot = start = now - timedelta(seconds=MISFIRE_GRACE_S)
    fire = trigger.get_next_fire_time(None, start)
    while fire is not None and fire <= now:
        slot = fire
        fire = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
    return slot.astimezone(UTC)


def once_per_schedule(
    job_id: str, trigger: Any, func: Callable[[Container], Awaitable[int]]
) -> Callable[[Container], Awaitable[int | None]]:
    """Wrap a job so that one replica runs each fire; each logs whether it ran or skipped.

    On PostgreSQL the container's leases take an advisory lock and claim the slot; on SQLite
    every fire runs (LocalJobLeases), as before.
    """

    async def run(container: Container) -> int | None:
        leases = container.leases or LocalJobLeases()
        slot = schedule_slot(trigger, datetime.now(UTC))
        async with leases.claim(job_id, slot) as skipped:
            if skipped is not None:
                log.info("maintenance.skipped", job=job_id, slot=slot.isoformat(), reason=skipped)
                return None
            result = await func(container)
            log.info("maintenance.ran", job=job_id, slot=slot.isoformat(), result=result)
            return result

    run.__name__ = f"{job_id}_once"
    return run


def build_scheduler(container: Container) -> Any | None:
    """An AsyncIOScheduler with the configured jobs, not yet started; None when disabled.

    Jobs coalesce and never overlap, and both are idempotent, so several server processes on
    one database may all run them.
    """
    schedule = container.settings.schedule
    if not schedule.enabled:
        return None
    scheduler = AsyncIOScheduler(timezone="UTC")
    jobs = (
        (RECALCULATE_JOB, schedule.recalculate_cron, recalculate_job),
        (PRUNE_JOB, schedule.prune_cron, prune_job),
    )
    for job_id, cron, func in jobs:
        if not cron:
            continue
        trigger = parse_cron(cron)
        scheduler.add_job(
            once_per_schedule(job_id, trigger, func),
            trigger,
            args=[container],
            id=job_id,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=MISFIRE_GRACE_S,
        )
    if not scheduler.get_jobs():
        return None
    return scheduler
