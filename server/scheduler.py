"""Scheduled maintenance: APScheduler 3 jobs that call the same services as the tools.

APScheduler 3 is untyped; its use stays in this module.
"""

from __future__ import annotations

from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from memory_core.services import maintenance
from server.container import Container

__all__ = ["build_scheduler", "parse_cron", "prune_job", "recalculate_job"]

log = structlog.get_logger(__name__)

RECALCULATE_JOB = "recalculate_tiers"
PRUNE_JOB = "prune_expired"


def parse_cron(expression: str) -> Any:
    """A UTC CronTrigger from a five-field crontab expression (ValueError if malformed)."""
    return CronTrigger.from_crontab(expression, timezone="UTC")


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
        scheduler.add_job(
            func,
            parse_cron(cron),
            args=[container],
            id=job_id,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=3600,
        )
    if not scheduler.get_jobs():
        return None
    return scheduler
