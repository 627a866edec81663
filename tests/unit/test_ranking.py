from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memory_core.config import RankingPolicy, TierPolicy
from memory_core.domain.models import Layer, Memory, TextMatch, Tier
from memory_core.domain.ranking import rank_text_matches, recency_signal
from memory_core.domain.tiers import tier_cutoffs

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUTS = tier_cutoffs(NOW, TierPolicy())
POLICY = RankingPolicy()


def memory(mid: int, age: timedelta) -> Memory:
    at = NOW - age
    return Memory(
        id=mid,
        project="p",
        layer=Layer.EPISODIC,
        key=None,
        content=f"m{mid}",
        metadata={},
        session_id=None,
        created_at=at,
        updated_at=at,
        last_accessed=None,
        access_count=0,
        tier=Tier.ACTIVE,
        content_hash=str(mid),
        token_count=1,
    )


def test_text_score_is_normalised_to_best_match() -> None:
    hits = rank_text_matches(
        [
            TextMatch(memory=memory(1, timedelta(days=3)), bm25=-4.0),
            TextMatch(memory=memory(2, timedelta(days=3)), bm25=-2.0),
        ],
        CUTS,
        POLICY,
    )
    assert [h.signals.text_score for h in hits] == [1.0, 0.5]
    assert hits[0].signals.bm25_rank == 1


def test_tier_boost_lifts_an_active_weaker_match_over_an_expired_stronger_one() -> None:
    hits = rank_text_matches(
        [
            TextMatch(memory=memory(1, timedelta(days=60)), bm25=-5.0),
            TextMatch(memory=memory(2, timedelta(minutes=5)), bm25=-3.0),
        ],
        CUTS,
        POLICY,
    )
    assert [h.memory.id for h in hits] == [2, 1]
    assert hits[0].signals.tier is Tier.ACTIVE and hits[0].signals.tier_boost == 0.3
    assert hits[1].signals.tier is Tier.EXPIRED and hits[1].signals.tier_boost == -0.2


def test_tier_is_classified_live_not_from_the_stored_column() -> None:
    stale = memory(1, timedelta(days=45)).model_copy(update={"tier": Tier.ACTIVE})
    (hit,) = rank_text_matches([TextMatch(memory=stale, bm25=-1.0)], CUTS, POLICY)
    assert hit.signals.tier is Tier.EXPIRED


def test_recency_halves_per_half_life() -> None:
    assert recency_signal(0, POLICY) == 1.0
    assert recency_signal(POLICY.recency_half_life_hours, POLICY) == 0.5


@given(st.lists(st.tuples(st.floats(-50, 0), st.integers(0, 90 * 24 * 3600)), max_size=40))
def test_every_match_ranked_once_in_non_increasing_score(rows: list[tuple[float, int]]) -> None:
    matches = [
        TextMatch(memory=memory(i, timedelta(seconds=age)), bm25=bm25)
        for i, (bm25, age) in enumerate(rows)
    ]
    hits = rank_text_matches(matches, CUTS, POLICY)
    assert sorted(h.memory.id for h in hits) == list(range(len(rows)))
    scores = [h.signals.score for h in hits]
    assert scores == sorted(scores, reverse=True)
