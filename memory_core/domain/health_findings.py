"""What the health notes of a project's stats say, from its counts alone; no pydantic.

`assess_health` (domain/health.py) wraps these in `HealthNote` models for the tools; the lean
`memstrata stats` (server/cli/lean_stats.py) prints them without building a model. One rule
for both, so the two answers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["EXPIRED_SHARE_TO_PRUNE", "HealthCode", "health_findings"]

HealthCode = Literal["empty", "over_cap", "near_cap", "prune_suggested", "inactive", "stale_tiers"]

EXPIRED_SHARE_TO_PRUNE = 0.2


def health_findings(
    total: int,
    by_tier: Mapping[str, int],
    stale_tiers: int,
    *,
    cap: int | None = None,
    near_share: float = 0.9,
    evict_archived: bool = False,
) -> list[tuple[HealthCode, str]]:
    """(code, message) of each finding worth telling a client about, most actionable first.

    Args:
        total: Rows of the project.
        by_tier: Rows per tier as of now, keyed by the tier's value ("ACTIVE", ...).
        stale_tiers: Rows whose stored tier is out of date.
        cap: The storage cap (PressurePolicy.max_memories); None: none.
        near_share: Share of the cap from which it is near (PressurePolicy.warn_share).
        evict_archived: Whether the cap may delete ARCHIVED memories too.
    """
    if total == 0:
        return [("empty", "No memories yet; `append` or `learn` to add some.")]
    notes = _cap_findings(total, by_tier, cap, near_share, evict_archived)
    expired = by_tier.get("EXPIRED", 0)
    if expired and expired / total >= EXPIRED_SHARE_TO_PRUNE:
        notes.append(
            (
                "prune_suggested",
                f"{expired} of {total} memories are EXPIRED; "
                "call `prune_expired_contexts` (try dry_run=true first).",
            )
        )
    if by_tier.get("ACTIVE", 0) == 0 and by_tier.get("RECENT", 0) == 0:
        notes.append(("inactive", "Nothing was used in the last day; this project looks inactive."))
    if stale_tiers:
        notes.append(
            (
                "stale_tiers",
                f"{stale_tiers} stored tiers are out of date; call `recalculate_memory_tiers`.",
            )
        )
    return notes


def _cap_findings(
    total: int, by_tier: Mapping[str, int], cap: int | None, near_share: float, archived: bool
) -> list[tuple[HealthCode, str]]:
    """The storage cap's finding: over it, or near it (issue 33.4)."""
    if cap is None or total < cap * near_share:
        return []
    room = by_tier.get("EXPIRED", 0) + (by_tier.get("ARCHIVED", 0) if archived else 0)
    which = "EXPIRED or ARCHIVED" if archived else "EXPIRED"
    if total > cap:
        if room == 0:
            return [
                (
                    "over_cap",
                    f"{total} memories, over the cap of {cap}, and none is {which}: nothing "
                    "may make room. Raise the cap, or allow ARCHIVED ones to go.",
                )
            ]
        return [
            (
                "over_cap",
                f"{total} memories, over the cap of {cap}: the least used {which} ones are "
                "deleted at the next write or daily maintenance; `prune_expired_contexts` "
                "with over_cap=true (try dry_run=true first) does it now.",
            )
        ]
    return [
        (
            "near_cap",
            f"{total} memories, {total * 100 // cap}% of the cap of {cap}; past it the least "
            f"used {which} ones are deleted.",
        )
    ]
