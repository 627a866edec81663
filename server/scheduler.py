"""Scheduled maintenance: APScheduler 3 jobs that call the same services as the tools.

APScheduler 3 is untyped; its use stays in this module (and server.cron), and it is imported
when a scheduler is built: importing this module for JobRuns (the server's context, the
dashboard) does not load it, so `serve` answers `tools/list` before it loads (issue 21).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from memory_core.storage.sqlite.leases import LocalJobLeases
from server.container import Container

__all__ = [
    "JobRun",
    "JobRuns",
    "build_scheduler",
    "cap_job",
    "once_per_schedule",
    "prune_job",
    "recalculate_job",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class JobRun:
    """One fire of a scheduled job in this process: when it ended and what it did."""

    finished: datetime
    result: int | None  # rows changed or deleted; None when another replica ran the slot
    skipped: str | None = None
    failed: bool = False


@dataclass
class JobRuns:
    """The last run of each job in this process (the dashboard shows them); not persisted."""

    last: dict[str, JobRun] = field(default_factory=dict)

    def record(self, job_id: str, run: JobRun) -> None:
        """Keep `run` as the job's latest."""
        self.last[job_id] = run


RECALCULATE_JOB = "recalculate_tiers"
PRUNE_JOB = "prune_expired"
CAP_JOB = "enforce_cap"
PATTERNS_JOB = "shared_patterns"


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


async def cap_job(container: Container) -> int:
    """Bring every project over the storage cap back under it (issue 33.4)."""
    outcomes = await container.maintenance.enforce_caps()
    deleted = sum(len(o.ids) for o in outcomes)
    log.info("job.ran", job=CAP_JOB, projects=len(outcomes), deleted=deleted)
    return deleted


async def patterns_job(container: Container) -> int:
    """Read opted-in tenants' new documents into the pattern pool and publish anew (33.6)."""
    done = await container.knowledge.business.shared.refresh()
    log.info("job.ran", job=PATTERNS_JOB, published=done.published, left=done.documents_left)
    return done.published


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
    job_id: str,
    trigger: Any,
    func: Callable[[Container], Awaitable[int]],
    runs: JobRuns | None = None,
) -> Callable[[Container], Awaitable[int | None]]:
    """Wrap a job so that one replica runs each fire; each logs whether it ran or skipped.

    On PostgreSQL the container's leases take an advisory lock and claim the slot; on SQLite
    every fire runs (LocalJobLeases), as before. Each outcome is also kept in `runs`.
    """

    async def run(container: Container) -> int | None:
        leases = container.leases or LocalJobLeases()
        slot = schedule_slot(trigger, datetime.now(UTC))
        try:
            async with leases.claim(job_id, slot) as skipped:
                if skipped is not None:
                    log.info(
                        "maintenance.skipped", job=job_id, slot=slot.isoformat(), reason=skipped
                    )
                    if runs is not None:
                        runs.record(job_id, JobRun(datetime.now(UTC), None, skipped=skipped))
                    return None
                result = await func(container)
                log.info("maintenance.ran", job=job_id, slot=slot.isoformat(), result=result)
        except Exception:
            if runs is not None:
                runs.record(job_id, JobRun(datetime.now(UTC), None, failed=True))
            raise
        if runs is not None:
            runs.record(job_id, JobRun(datetime.now(UTC), result))
        return result

    run.__name__ = f"{job_id}_once"
    return run


def build_scheduler(container: Container, runs: JobRuns | None = None) -> Any | None:
    """An AsyncIOScheduler with the configured jobs, not yet started; None when disabled.

    Jobs coalesce and never overlap, and both are idempotent, so several server processes on
    one database may all run them.
    """
    schedule = container.settings.schedule
    if not schedule.enabled:
        return None
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from server.cron import parse_cron

    scheduler = AsyncIOScheduler(timezone="UTC")
    # The cap is enforced daily, beside the recalculation (it reads live tiers, not stored
    # ones). A write over the cap enforces it at once; this catches the writes of processes
    # that exited before their enforcement ended (the hooks).
    capped = container.settings.pressure.max_memories is not None
    sharing = container.settings.knowledge.shared_patterns
    jobs = (
        (RECALCULATE_JOB, schedule.recalculate_cron, recalculate_job),
        (PRUNE_JOB, schedule.prune_cron, prune_job),
        (CAP_JOB, schedule.recalculate_cron if capped else None, cap_job),
        # Daily, beside the recalculation: whether a sentence may be shared depends on the
        # whole pool, so it is computed by a bounded job, not on each ingest.
        (PATTERNS_JOB, schedule.recalculate_cron if sharing else None, patterns_job),
    )
    for job_id, cron, func in jobs:
        if not cron:
            continue
        trigger = parse_cron(cron)
        scheduler.add_job(
            once_per_schedule(job_id, trigger, func, runs),
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
