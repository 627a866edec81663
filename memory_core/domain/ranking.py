"""Ranking: turn raw keyword matches into scored hits using the tier and recency signals."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.config import RankingPolicy
from memory_core.domain.models import RankSignals, SearchHit, TextMatch, Tier, TierCutoffs
from memory_core.domain.tiers import classify_tier

__all__ = ["rank_text_matches", "recency_signal", "tier_boost"]


def tier_boost(tier: Tier, policy: RankingPolicy) -> float:
    """The additive boost a tier earns on the normalised score."""
    return {
        Tier.ACTIVE: policy.active_boost,
        Tier.RECENT: policy.recent_boost,
        Tier.ARCHIVED: policy.archived_boost,
        Tier.EXPIRED: policy.expired_boost,
    }[tier]


def recency_signal(age_hours: float, policy: RankingPolicy) -> float:
    """Exponential decay in [0, 1]: 1 for a row used just now, 0.5 after one half-life."""
    return float(0.5 ** (max(age_hours, 0.0) / policy.recency_half_life_hours))


def rank_text_matches(
    matches: Sequence[TextMatch], cutoffs: TierCutoffs, policy: RankingPolicy
) -> list[SearchHit]:
    """Score keyword matches and return them best first.

    The text score is BM25 divided by the best BM25 of this result set, so it lies in (0, 1] and
    the tier boosts (+0.3 ACTIVE ... -0.2 EXPIRED) weigh the same whatever the query. The tier is
    classified live from the reference time, so a stale stored tier cannot skew the ranking.
    Ties keep the newer memory first.
    """
    # FTS5's bm25() is negative, more negative is better; flip it so bigger is better.
    strengths = [max(-m.bm25, 0.0) for m in matches]
    best = max(strengths, default=0.0)
    hits: list[SearchHit] = []
    for rank, (match, strength) in enumerate(zip(matches, strengths, strict=True), start=1):
        text_score = strength / best if best > 0 else 1.0
        tier = classify_tier(match.memory.reference_time, cutoffs)
        age_hours = (cutoffs.now - match.memory.reference_time).total_seconds() / 3600
        boost = tier_boost(tier, policy)
        recency = recency_signal(age_hours, policy)
        score = text_score + boost + policy.recency_weight * recency
        signals = RankSignals(
            bm25_rank=rank,
            bm25=match.bm25,
            text_score=round(text_score, 6),
            tier=tier,
            tier_boost=boost,
            recency=round(recency, 6),
            score=round(score, 6),
        )
        hits.append(SearchHit(memory=match.memory, signals=signals))
    hits.sort(key=lambda h: (-h.signals.score, -h.memory.id))
    return hits
