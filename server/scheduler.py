"""Scheduled maintenance: APScheduler 3 jobs that call the same services as the tools.

APScheduler 3 is untyped; its use stays in this module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from memory_core.services import maintenance
from server.backends import LocalJobLeases
from server.container import Container

__all__ = [
    "JobRun",
    "JobRuns",
    "build_scheduler",
    "once_per_schedule",
    "parse_cron",
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


_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _standard_day_of_week(field: str) -> str:
    """Translate a crontab day-of-week field (0 or 7 = Sunday) into day names.

    APScheduler 3 numbers days from Monday = 0, so `CronTrigger.from_crontab("0 0 * * 0")` fires
    on Mondays. Spelling the days out keeps the crontab meaning every user expects. Parts that
    are already names (`sat`, `mon-fri`) pass through; numeric parts are converted.
    """
    if field == "*":
        return field
    names: list[str] = []
    for part in field.split(","):
        if part.isalpha() or (part.replace("-", "").isalpha() and part.count("-") == 1):
            names.append(part.lower())
            continue
        span, slash, step_text = part.partition("/")
        if slash and not step_text.isdigit():
            raise ValueError(f"invalid day-of-week field {field!r}: a step needs a number")
        step = int(step_text) if step_text else 1
        try:
            if span == "*":
                first, last = 0, 6
            elif "-" in span:
                first_text, last_text = span.split("-", 1)
                first, last = int(first_text), int(last_text)
            else:
                first = int(span)
                last = 6 if slash else first
        except ValueError:
            raise ValueError(
                f"invalid day-of-week field {field!r} (use 0-7, 0 and 7 = Sunday, or names)"
            ) from None
        if not (0 <= first <= 7 and 0 <= last <= 7 and first <= last and step >= 1):
            raise ValueError(f"invalid day-of-week field {field!r} (use 0-7, 0 and 7 = Sunday)")
        names.extend(_DAY_NAMES[d % 7] for d in range(first, last + 1, step))
    return ",".join(dict.fromkeys(names))


def parse_cron(expression: str) -> Any:
    """A UTC CronTrigger from a five-field crontab expression, with crontab's day numbering.

    Raises:
        ValueError: The expression is malformed.
    """
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"Wrong number of fields; got {len(fields)}, expected 5")
    minute, hour, day, month, day_of_week = fields
    return CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=_standard_day_of_week(day_of_week),
        timezone="UTC",
    )


async def recalculate_job(container: Container) -> int:
    """Recalculate tiers across all projects."""
    changed = await maintenance.recalculate_tiers(
        container.repo, container.clock, container.settings.tiers, None
    )
    log.info("job.ran", job=RECALCULATE_JOB, changed=changed)
    return changed


async def prune_job(container: Container) -> int:
    """Prune EXPIRED memories across all projects, up to the configured limit."""
    outcome = await maintenance.prune_expired(
        container.repo,
        container.clock,
        container.settings.tiers,
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
