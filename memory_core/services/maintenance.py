"""Keeping the store healthy: tier recalculation, pruning and stats.

The functions take the repository, clock and policy; MaintenanceService binds them once, so
the tools, resources, CLI and scheduler call one service method each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from pydantic import BaseModel, ConfigDict

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.domain.health import HealthNote, assess_health
from memory_core.domain.inputs import check_project
from memory_core.domain.models import PruneOutcome, StoreStats, TierCutoffs
from memory_core.domain.tiers import tier_cutoffs
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock, MemoryRepository
from memory_core.services.pressure import CapOutcome, enforce_all, enforce_cap, pressure_store

__all__ = [
    "MaintenanceService",
    "StatsReport",
    "memory_stats",
    "prune_expired",
    "recalculate_tiers",
    "use_ages",
]

log = structlog.get_logger(__name__)

# Rows one transaction of a prune deletes. Each commit writes every B-tree page the batch
# dirtied (the content-hash index is in random order) and may checkpoint the WAL, so larger
# batches write shared pages once: at 1M rows 104 us a row in batches of 2,000, 85 us in
# batches of 5,000 (bench/scale.py store). 5,000 still holds the write lock under half a
# second at a time.
PRUNE_BATCH = 5000


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
    progress: Callable[[int, int], Awaitable[None]] | None = None,
) -> PruneOutcome:
    """Delete up to `limit` EXPIRED memories, least used then oldest first (list if `dry_run`).

    The candidates are listed first (the dry run's answer), then deleted in batches of
    PRUNE_BATCH, each its own transaction that re-checks every row's live tier, so a memory
    used since it was listed is kept. `progress(done, total)` is awaited after each batch.

    Trigger: a large prune (100k rows). Why: a single DELETE holds the write lock for
    seconds, and the former batches (200 rows) recalculated every tier of the store and
    re-listed the candidates per batch (24 s for 60k rows at 100k). Outcome: one listing,
    then one cheap DELETE by id per batch.
    """
    if project is not None:
        check_project(project)
    if limit is not None and limit < 1:
        raise InvalidInputError("limit", f"must be at least 1 when given (got {limit})")
    cutoffs = tier_cutoffs(clock.now(), policy)
    planned = await repo.prune_expired(cutoffs, project, limit=limit, dry_run=True)
    if dry_run:
        outcome = planned
    else:
        outcome = await _prune_in_batches(repo, cutoffs, project, limit, planned.ids, progress)
    log.info("memories.pruned", project=project or "*", count=len(outcome.ids), dry_run=dry_run)
    return outcome


async def _prune_in_batches(
    repo: MemoryRepository,
    cutoffs: TierCutoffs,
    project: str | None,
    limit: int | None,
    planned: list[int],
    progress: Callable[[int, int], Awaitable[None]] | None,
) -> PruneOutcome:
    total = len(planned)
    if progress is not None:
        await progress(0, total)
    deleted: list[int] = []
    while planned:
        shortfall = False
        for start in range(0, len(planned), PRUNE_BATCH):
            batch = planned[start : start + PRUNE_BATCH]
            done = await repo.delete_expired(batch, cutoffs)
            deleted.extend(done)
            shortfall = shortfall or len(done) < len(batch)
            if progress is not None:
                await progress(min(len(deleted), total), total)
        # Trigger: some listed rows were gone (another process pruned them) or used. Why: a
        # limited prune must still delete up to `limit` rows when more are expired, as
        # concurrent jobs sharing one file expect. Outcome: list again for what is left.
        if not shortfall or (limit is not None and len(deleted) >= limit):
            break
        left = None if limit is None else limit - len(deleted)
        planned = (await repo.prune_expired(cutoffs, project, limit=left, dry_run=True)).ids
    return PruneOutcome(ids=sorted(deleted), dry_run=False)


async def memory_stats(
    repo: MemoryRepository,
    clock: Clock,
    policy: TierPolicy,
    project: str,
    pressure: PressurePolicy | None = None,
) -> StatsReport:
    """Counts per tier (as of now) and layer, sizes, dates and health notes of a project.

    `pressure`: the storage cap, so the notes say when the project is over or near it.
    """
    stats = await repo.stats(check_project(project), tier_cutoffs(clock.now(), policy))
    return StatsReport(stats=stats, health=assess_health(stats, pressure))


async def use_ages(
    repo: MemoryRepository, clock: Clock, project: str, *, max_days: int = 60
) -> dict[int, int]:
    """How many memories were last used (else created) N whole days ago, N from 0 to max_days.

    Every day is present (0 when none); older ones are counted at `max_days`. Tiers are bands
    of this age, so it shows how the project will age if nothing is used.
    """
    if not 1 <= max_days <= 3650:
        raise InvalidInputError("max_days", f"must be 1 to 3650 (got {max_days})")
    found = await repo.use_ages(check_project(project), clock.now(), max_days=max_days)
    return {day: found.get(day, 0) for day in range(max_days + 1)}


@dataclass(frozen=True, kw_only=True)
class MaintenanceService:
    """Tier recalculation, pruning and stats of one store under its tier policy."""

    repo: MemoryRepository
    clock: Clock
    policy: TierPolicy
    pressure: PressurePolicy = field(default_factory=PressurePolicy)  # the storage cap

    async def recalculate_tiers(self, project: str | None = None) -> int:
        """Re-derive tiers of a project (None: every project); how many rows changed tier."""
        return await recalculate_tiers(self.repo, self.clock, self.policy, project)

    async def prune_expired(
        self,
        *,
        project: str | None,
        limit: int | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], Awaitable[None]] | None = None,
    ) -> PruneOutcome:
        """Delete (or with `dry_run` list) up to `limit` EXPIRED memories; see prune_expired."""
        return await prune_expired(
            self.repo,
            self.clock,
            self.policy,
            project=project,
            limit=limit,
            dry_run=dry_run,
            progress=progress,
        )

    async def enforce_cap(
        self,
        project: str,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], Awaitable[None]] | None = None,
    ) -> CapOutcome:
        """Bring a project over the storage cap back under it (list only, with `dry_run`).

        See services.pressure.enforce_cap; nothing happens without a cap (or a store for it).
        """
        store = pressure_store(self.repo)
        if store is None:
            size = (await self.stats(project)).stats.total
            return CapOutcome(project, None, size, None, [], dry_run)
        return await enforce_cap(
            store,
            self.clock,
            self.policy,
            self.pressure,
            project,
            dry_run=dry_run,
            progress=progress,
        )

    async def enforce_caps(self, *, dry_run: bool = False) -> list[CapOutcome]:
        """`enforce_cap` for every project over the storage cap (the daily job's work)."""
        store = pressure_store(self.repo)
        if store is None:
            return []
        return await enforce_all(store, self.clock, self.policy, self.pressure, dry_run=dry_run)

    async def stats(self, project: str) -> StatsReport:
        """Counts per tier and layer, sizes, dates and health notes of a project."""
        return await memory_stats(self.repo, self.clock, self.policy, project, self.pressure)
