"""Health indicators derived from a project's stats."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory_core.domain.models import StoreStats, Tier

__all__ = ["HealthNote", "assess_health"]

EXPIRED_SHARE_TO_PRUNE = 0.2


class HealthNote(BaseModel):
    """One finding about the store, with the action that addresses it."""

    model_config = ConfigDict(frozen=True)

    code: Literal["empty", "prune_suggested", "inactive", "stale_tiers"]
    message: str


def assess_health(stats: StoreStats) -> list[HealthNote]:
    """Findings worth telling a client about, most actionable first."""
    if stats.total == 0:
        return [
            HealthNote(code="empty", message="No memories yet; `append` or `learn` to add some.")
        ]
    notes: list[HealthNote] = []
    expired = stats.by_tier[Tier.EXPIRED]
    if expired and expired / stats.total >= EXPIRED_SHARE_TO_PRUNE:
        notes.append(
            HealthNote(
                code="prune_suggested",
                message=f"{expired} of {stats.total} memories are EXPIRED; "
                "call `prune_expired_contexts` (try dry_run=true first).",
            )
        )
    if stats.by_tier[Tier.ACTIVE] == 0 and stats.by_tier[Tier.RECENT] == 0:
        notes.append(
            HealthNote(
                code="inactive",
                message="Nothing was used in the last day; this project looks inactive.",
            )
        )
    if stats.stale_tiers:
        notes.append(
            HealthNote(
                code="stale_tiers",
                message=f"{stats.stale_tiers} stored tiers are out of date; "
                "call `recalculate_memory_tiers`.",
            )
        )
    return notes
