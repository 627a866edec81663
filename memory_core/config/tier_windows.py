"""The tiers' default age thresholds and the instants they give at one `now`; no pydantic.

Trigger: `memstrata stats` answers from the kept counts without importing pydantic (issue 21,
server/cli/lean_stats.py), and its tiers must be the ones `TierPolicy` and `tier_cutoffs`
give. Why a module of its own: both paths then read the same defaults and the same arithmetic.
"""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["ACTIVE_HOURS", "ARCHIVED_DAYS", "RECENT_HOURS", "cutoff_instants"]

ACTIVE_HOURS = 1.0
RECENT_HOURS = 24.0
ARCHIVED_DAYS = 30.0


def cutoff_instants(
    now: datetime, active_hours: float, recent_hours: float, archived_days: float
) -> tuple[datetime, datetime, datetime]:
    """The instants after which a reference time is ACTIVE, RECENT, ARCHIVED (else EXPIRED)."""
    return (
        now - timedelta(hours=active_hours),
        now - timedelta(hours=recent_hours),
        now - timedelta(days=archived_days),
    )
