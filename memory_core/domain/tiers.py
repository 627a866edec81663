"""Tier classification: a pure function of a reference time and the clock."""

from __future__ import annotations

from datetime import datetime

from memory_core.config.policies import TierPolicy
from memory_core.config.tier_windows import cutoff_instants
from memory_core.domain.models import Memory, Tier, TierCutoffs

__all__ = ["TIER_ORDER", "classify_tier", "handed_out", "tier_cutoffs"]

TIER_ORDER: tuple[Tier, ...] = (Tier.ACTIVE, Tier.RECENT, Tier.ARCHIVED, Tier.EXPIRED)


def tier_cutoffs(now: datetime, policy: TierPolicy) -> TierCutoffs:
    """Turn the age thresholds into absolute instants at `now`.

    Storage backends classify whole tables with these instants in one set-based statement, so
    the boundaries here are the single definition both paths share.
    """
    active, recent, archived = cutoff_instants(
        now, policy.active_hours, policy.recent_hours, policy.archived_days
    )
    return TierCutoffs(now=now, active_after=active, recent_after=recent, archived_after=archived)


def classify_tier(reference: datetime, cutoffs: TierCutoffs) -> Tier:
    """Return the tier of a row last used (or created) at `reference`.

    An age of exactly one threshold falls into the older tier: ACTIVE means *less than* one hour.
    A reference in the future (clock skew between processes) counts as ACTIVE.
    """
    if reference > cutoffs.active_after:
        return Tier.ACTIVE
    if reference > cutoffs.recent_after:
        return Tier.RECENT
    if reference > cutoffs.archived_after:
        return Tier.ARCHIVED
    return Tier.EXPIRED


def handed_out(memory: Memory, at: datetime) -> Memory:
    """`memory` as recording its use at `at` leaves it (the repositories' `hand_out` update).

    A use recorded late (at capture) never moves the last access back.
    """
    last = at if memory.last_accessed is None else max(memory.last_accessed, at)
    return memory.model_copy(
        update={"last_accessed": last, "access_count": memory.access_count + 1, "tier": Tier.ACTIVE}
    )
