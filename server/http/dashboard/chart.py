"""Geometry of the dashboard's inline SVG charts (no script, no stylesheet from elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.config import TierPolicy
from memory_core.domain.models import Tier

__all__ = ["AgeBar", "TierBand", "age_bars", "tier_bands"]

CHART_WIDTH = 720
CHART_HEIGHT = 160


@dataclass(frozen=True)
class AgeBar:
    """One day of the "days since last use" chart."""

    day: int
    count: int
    tier: Tier
    x: float
    y: float
    width: float
    height: float
    last: bool  # the bar that also counts everything older


@dataclass(frozen=True)
class TierBand:
    """One tier's share of the stacked bar."""

    tier: Tier
    count: int
    x: float
    width: float


def tier_of_day(day: int, policy: TierPolicy) -> Tier:
    """The tier of a memory last used `day` whole days ago, taken at the day's middle."""
    hours = (day + 0.5) * 24
    if hours < policy.active_hours:
        return Tier.ACTIVE
    if hours < policy.recent_hours:
        return Tier.RECENT
    if hours < policy.archived_days * 24:
        return Tier.ARCHIVED
    return Tier.EXPIRED


def age_bars(ages: dict[int, int], policy: TierPolicy) -> list[AgeBar]:
    """Bars of memories per day since last use, coloured by the tier that age falls in.

    Heights are on a square-root scale: one busy day would otherwise flatten every other bar
    to nothing, and the point is to see where the memories sit relative to the thresholds.
    """
    days = sorted(ages)
    if not days:
        return []
    top = max(ages.values()) or 1
    slot = CHART_WIDTH / len(days)
    bars = []
    for i, day in enumerate(days):
        count = ages[day]
        height = 0.0 if count == 0 else max(2.0, (count / top) ** 0.5 * (CHART_HEIGHT - 4))
        bars.append(
            AgeBar(
                day=day,
                count=count,
                tier=tier_of_day(day, policy),
                x=round(i * slot + 1, 2),
                y=round(CHART_HEIGHT - height, 2),
                width=round(max(slot - 2, 1), 2),
                height=round(height, 2),
                last=i == len(days) - 1,
            )
        )
    return bars


def tier_bands(by_tier: dict[Tier, int]) -> list[TierBand]:
    """The stacked bar of counts per tier (tiers with no memory are left out)."""
    total = sum(by_tier.values())
    if total == 0:
        return []
    bands, x = [], 0.0
    for tier in Tier:
        count = by_tier.get(tier, 0)
        if count == 0:
            continue
        width = CHART_WIDTH * count / total
        bands.append(TierBand(tier=tier, count=count, x=round(x, 2), width=round(width, 2)))
        x += width
    return bands
