"""What the health notes of a project's stats say, from its counts alone; no pydantic.

`assess_health` (domain/health.py) wraps these in `HealthNote` models for the tools; the lean
`memstrata stats` (server/cli/lean_stats.py) prints them without building a model. One rule
for both, so the two answers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["EXPIRED_SHARE_TO_PRUNE", "HealthCode", "health_findings"]

HealthCode = Literal["empty", "prune_suggested", "inactive", "stale_tiers"]

EXPIRED_SHARE_TO_PRUNE = 0.2


def health_findings(
    total: int, by_tier: Mapping[str, int], stale_tiers: int
) -> list[tuple[HealthCode, str]]:
    """(code, message) of each finding worth telling a client about, most actionable first.

    Args:
        total: Rows of the project.
        by_tier: Rows per tier as of now, keyed by the tier's value ("ACTIVE", ...).
        stale_tiers: Rows whose stored tier is out of date.
    """
    if total == 0:
        return [("empty", "No memories yet; `append` or `learn` to add some.")]
    notes: list[tuple[HealthCode, str]] = []
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
