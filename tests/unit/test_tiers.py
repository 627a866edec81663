from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Tier
from memory_core.domain.tiers import TIER_ORDER, classify_tier, tier_cutoffs

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUTS = tier_cutoffs(NOW, TierPolicy())


@pytest.mark.parametrize(
    ("age", "tier"),
    [
        (timedelta(0), Tier.ACTIVE),
        (timedelta(minutes=59, seconds=59, microseconds=999_999), Tier.ACTIVE),
        (timedelta(hours=1), Tier.RECENT),
        (timedelta(hours=23, minutes=59, seconds=59), Tier.RECENT),
        (timedelta(hours=24), Tier.ARCHIVED),
        (timedelta(days=29, hours=23, minutes=59), Tier.ARCHIVED),
        (timedelta(days=30), Tier.EXPIRED),
        (timedelta(days=400), Tier.EXPIRED),
        (timedelta(minutes=-5), Tier.ACTIVE),  # clock skew: from the future counts as fresh
    ],
)
def test_classify_tier_exact_boundaries(age: timedelta, tier: Tier) -> None:
    assert classify_tier(NOW - age, CUTS) is tier


def test_tier_policy_thresholds_are_configurable() -> None:
    cuts = tier_cutoffs(NOW, TierPolicy(active_hours=2, recent_hours=48, archived_days=7))
    assert classify_tier(NOW - timedelta(minutes=90), cuts) is Tier.ACTIVE
    assert classify_tier(NOW - timedelta(hours=30), cuts) is Tier.RECENT
    assert classify_tier(NOW - timedelta(days=7), cuts) is Tier.EXPIRED


def test_tier_policy_rejects_unordered_thresholds() -> None:
    with pytest.raises(ValueError, match="must grow"):
        TierPolicy(active_hours=30, recent_hours=24)


@given(st.integers(0, 10**8), st.integers(0, 10**8))
def test_tier_is_monotone_in_age(a: int, b: int) -> None:
    young, old = sorted((a, b))
    t_young = classify_tier(NOW - timedelta(seconds=young), CUTS)
    t_old = classify_tier(NOW - timedelta(seconds=old), CUTS)
    assert TIER_ORDER.index(t_young) <= TIER_ORDER.index(t_old)
