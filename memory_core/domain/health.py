"""Health indicators derived from a project's stats."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from memory_core.config.policies import PressurePolicy
from memory_core.domain.health_findings import HealthCode, health_findings
from memory_core.domain.models import StoreStats

__all__ = ["HealthNote", "assess_health"]


class HealthNote(BaseModel):
    """One finding about the store, with the action that addresses it."""

    model_config = ConfigDict(frozen=True)

    code: HealthCode
    message: str


def assess_health(stats: StoreStats, pressure: PressurePolicy | None = None) -> list[HealthNote]:
    """Findings worth telling a client about, most actionable first (see health_findings).

    `pressure`: the storage cap, whose finding says when the project is over or near it.
    """
    by_tier = {tier.value: n for tier, n in stats.by_tier.items()}
    policy = pressure or PressurePolicy()
    found = health_findings(
        stats.total,
        by_tier,
        stats.stale_tiers,
        cap=policy.max_memories,
        near_share=policy.warn_share,
        evict_archived=policy.evict_archived,
    )
    return [HealthNote(code=code, message=message) for code, message in found]
