"""Keeping the store healthy: tier recalculation, pruning and stats (plain async functions)."""

from __future__ import annotations

import structlog
from pydantic import BaseModel, ConfigDict

from memory_core.config import TierPolicy
from memory_core.domain.health import HealthNote, assess_health
from memory_core.domain.inputs import check_project
from memory_core.domain.models import PruneOutcome, StoreStats
from memory_core.domain.tiers import tier_cutoffs
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock, MemoryRepository

__all__ = ["StatsReport", "memory_stats", "prune_expired", "recalculate_tiers"]

log = structlog.get_logger(__name__)


class StatsReport(BaseModel):
    """Stats of a project and what they suggest doing."""

    model_config = ConfigDict(frozen=True)

    stats: StoreStats
    health: list[HealthNote]


async def recalculate_tiers(
    repo: MemoryRepository, clock: Clock, policy: TierPolicy, project: str | None = None
) -> int:
    """Re-derive every row's tier from its last access; returns how many rows changed tier.

    Idempotent: a second run at the same instant changes nothing.
    """
    if project is not None:
        check_project(project)
    changed = await repo.recalculate_tiers(tier_cutoffs(clock.now(), policy), project)
    log.info("tiers.recalculated", project=project or "*", changed=changed)
    return changed


async def prune_expired(
    repo: MemoryRepository,
    clock: Clock,
    policy: TierPolicy,
    *,
    project: str | None,
    limit: int | None = None,
    dry_run: bool = False,
) -> PruneOutcome:
    """Delete up to `limit` EXPIRED memories, oldest first (only list them when `dry_run`)."""
    if project is not None:
        check_project(project)
    if limit is not None and limit < 1:
        raise InvalidInputError("limit", f"must be at least 1 when given (got {limit})")
    outcome = await repo.prune_expired(
        tier_cutoffs(clock.now(), policy), project, limit=limit, dry_run=dry_run
    )
    log.info("memories.pruned", project=project or "*", count=len(outcome.ids), dry_run=dry_run)
    return outcome


async def memory_stats(
    repo: MemoryRepository, clock: Clock, policy: TierPolicy, project: str
) -> StatsReport:
    """Counts per tier (as of now) and layer, sizes, dates and health notes of a project."""
    stats = await repo.stats(check_project(project), tier_cutoffs(clock.now(), policy))
    return StatsReport(stats=stats, health=assess_health(stats))
