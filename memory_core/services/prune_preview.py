"""What pruning a project would delete now, a page at a time, at a cost that does not grow.

The forgetting page of the dashboard shows it and offers the prune. Its cost is bounded by
the page and `count_cap`, not by the store: any signed-in reader may reload it as often as
they like (the former dry run read and sorted every expired row, and looked up each row it
showed one query at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory_core.config.policies import TierPolicy
from memory_core.domain.inputs import check_project
from memory_core.domain.models import Memory
from memory_core.domain.tiers import tier_cutoffs
from memory_core.ports import Clock, MemoryRepository

__all__ = ["PrunePreview", "prune_preview"]


@dataclass(frozen=True)
class PrunePreview:
    """One page of the rows a prune would delete, and how many it would delete in all."""

    rows: list[Memory]
    total: int  # exact when `counted`, else more than count_cap
    counted: bool
    next_after: tuple[datetime, int] | None  # the mark of the next page; None: last page


async def prune_preview(
    repo: MemoryRepository,
    clock: Clock,
    policy: TierPolicy,
    project: str,
    *,
    after: tuple[datetime, int] | None,
    limit: int,
    count_cap: int,
) -> PrunePreview:
    """The page of expired rows after `after` (oldest use first) and their count (capped)."""
    project = check_project(project)
    cutoffs = tier_cutoffs(clock.now(), policy)
    rows = await repo.expired_page(project, cutoffs, after=after, limit=limit + 1)
    counted = await repo.count_expired(project, cutoffs, cap=count_cap)
    more = len(rows) > limit
    rows = rows[:limit]
    last = rows[-1] if more else None
    return PrunePreview(
        rows=rows,
        total=min(counted, count_cap),
        counted=counted <= count_cap,
        next_after=(last.reference_time, last.id) if last is not None else None,
    )
