"""Geometry of the dashboard's inline SVG charts (no script, no stylesheet from elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Tier

__all__ = ["AgeBar", "AgeSegment", "TierBand", "age_bars", "tier_bands"]

CHART_WIDTH = 720
CHART_HEIGHT = 160
# Room above the bars for their counts, written upwards ("100000" at 9 px is ~34 px long).
LABEL_SPACE = 40


@dataclass(frozen=True)
class AgeSegment:
    """The part of a day's bar in one tier (a day a tier boundary crosses has two or more)."""

    tier: Tier
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class AgeBar:
    """One day of the "days since last use" chart."""

    day: int
    count: int
    tier: Tier  # the tier at the day's middle (the segments say which part is in which)
    x: float
    y: float
    width: float
    height: float
    last: bool  # the bar that also counts everything older
    segments: tuple[AgeSegment, ...] = ()  # youngest first, stacked from the bottom

    @property
    def centre(self) -> float:
        """The bar's middle on the x axis (where its count is written)."""
        return round(self.x + self.width / 2, 2)


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


def age_bars(
    ages: dict[int, int], policy: TierPolicy, by_tier: Mapping[Tier, int] | None = None
) -> list[AgeBar]:
    """Bars of memories per day since last use, coloured by the tiers that age falls in.

    Heights are on a square-root scale: one busy day would otherwise flatten every other bar
    to nothing, and the point is to see where the memories sit relative to the thresholds.
    A tier boundary inside a day (one hour, ACTIVE to RECENT, falls inside day 0) splits that
    day's bar: with `by_tier` (the live counts of the same project) each part's count is
    exact, since a tier is a band of the same age (memories younger than a boundary are the
    counts of the tiers below it). Without it the whole bar takes the tier of its middle,
    which showed day 0 as RECENT while memories were ACTIVE.
    """
    days = sorted(ages)
    if not days:
        return []
    top = max(ages.values()) or 1
    slot = CHART_WIDTH / len(days)
    bottom = LABEL_SPACE + CHART_HEIGHT
    bars = []
    younger = 0  # memories younger than the current day
    for i, day in enumerate(days):
        count = ages[day]
        last = i == len(days) - 1
        height = 0.0 if count == 0 else max(2.0, (count / top) ** 0.5 * (CHART_HEIGHT - 4))
        parts = _day_parts(day, last, count, younger, policy, by_tier)
        younger += count
        segments, base = [], float(bottom)
        for tier, n in parts:
            part = height * n / count if count else 0.0
            base -= part
            segments.append(AgeSegment(tier, n, round(base, 2), round(part, 2)))
        bars.append(
            AgeBar(
                day=day,
                count=count,
                tier=tier_of_day(day, policy),
                x=round(i * slot + 1, 2),
                y=round(bottom - height, 2),
                width=round(max(slot - 2, 1), 2),
                height=round(height, 2),
                last=last,
                segments=tuple(segments),
            )
        )
    return bars


def _day_parts(
    day: int,
    last: bool,
    count: int,
    younger: int,
    policy: TierPolicy,
    by_tier: Mapping[Tier, int] | None,
) -> list[tuple[Tier, int]]:
    """(tier, memories) of each part of a day's bar, youngest first; parts with none left out.

    `younger`: memories younger than the day (the counts of the days before it).
    """
    start, end = day * 24.0, (day + 1) * 24.0
    inside = [(h, t) for h, t in _boundaries(policy) if start < h and (last or h < end)]
    if by_tier is None or not inside:
        return [(tier_of_day(day, policy), count)] if count else []
    parts: list[tuple[Tier, int]] = []
    tier, below, left = _tier_at(start, policy), younger, count
    for _, older in inside:
        # Memories younger than the boundary: the live counts of the tiers before `older`.
        under = sum(by_tier.get(t, 0) for t in _ORDER[: _ORDER.index(older)])
        n = min(max(under - below, 0), left)  # the two reads may differ by a write or two
        parts.append((tier, n))
        below, left, tier = below + n, left - n, older
    parts.append((tier, left))
    return [(t, n) for t, n in parts if n]


_ORDER = list(Tier)  # youngest first: ACTIVE, RECENT, ARCHIVED, EXPIRED


def _boundaries(policy: TierPolicy) -> list[tuple[float, Tier]]:
    """(age in hours, the tier from that age on) of each tier boundary, youngest first."""
    return [
        (policy.active_hours, Tier.RECENT),
        (policy.recent_hours, Tier.ARCHIVED),
        (policy.archived_days * 24, Tier.EXPIRED),
    ]


def _tier_at(hours: float, policy: TierPolicy) -> Tier:
    """The tier of a memory last used `hours` ago (a boundary age is the older tier)."""
    tier = Tier.ACTIVE
    for boundary, older in _boundaries(policy):
        if hours >= boundary:
            tier = older
    return tier


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
