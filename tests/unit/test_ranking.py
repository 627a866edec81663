from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.config.policies import RankingPolicy, TierPolicy
from memory_core.domain import ranking
from memory_core.domain.models import Memory, SearchHit, SearchMode, Tier
from memory_core.domain.ranking import (
    Candidate,
    author_named,
    follow_lifts,
    fuse_ranks,
    name_words,
    recency_signal,
    session_lift,
)
from memory_core.domain.tiers import classify_tier, tier_cutoffs
from tests.fakes import make_memory

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUTS = tier_cutoffs(NOW, TierPolicy())
POLICY = RankingPolicy()


def rank_candidates(*args: Any, **kwargs: Any) -> list[SearchHit]:
    """The hits of `ranking.rank_candidates` (which also says how many min_match dropped)."""
    return ranking.rank_candidates(*args, **kwargs)[0]


def rank_keyword(candidates: list[Candidate], cuts: object, policy: RankingPolicy):
    ranked = sorted(candidates, key=lambda c: c.bm25 or 0.0)
    return rank_candidates(
        [c.model_copy(update={"bm25_rank": i}) for i, c in enumerate(ranked, start=1)],
        SearchMode.KEYWORD,
        cuts,
        policy,
    )


def memory(mid: int, age: timedelta) -> Memory:
    return make_memory(mid, NOW - age)


def test_relevance_is_normalised_to_best_match() -> None:
    hits = rank_keyword(
        [
            Candidate(memory=memory(1, timedelta(days=3)), bm25_rank=None, bm25=-4.0),
            Candidate(memory=memory(2, timedelta(days=3)), bm25_rank=None, bm25=-2.0),
        ],
        CUTS,
        POLICY,
    )
    # Ranks, not BM25 values, set relevance: 1 / (k + rank) over the best (k = 10).
    assert [h.signals.relevance for h in hits] == [1.0, round(11 / 12, 6)]
    assert hits[0].signals.bm25_rank == 1


def test_tier_boost_lifts_an_active_weaker_match_over_an_expired_stronger_one() -> None:
    hits = rank_keyword(
        [
            Candidate(memory=memory(1, timedelta(days=60)), bm25_rank=None, bm25=-5.0),
            Candidate(memory=memory(2, timedelta(minutes=5)), bm25_rank=None, bm25=-3.0),
        ],
        CUTS,
        POLICY,
    )
    assert [h.memory.id for h in hits] == [2, 1]
    assert hits[0].signals.tier is Tier.ACTIVE and hits[0].signals.tier_boost == 0.3
    assert hits[1].signals.tier is Tier.EXPIRED and hits[1].signals.tier_boost == -0.2


def test_tier_is_classified_live_not_from_the_stored_column() -> None:
    stale = memory(1, timedelta(days=45)).model_copy(update={"tier": Tier.ACTIVE})
    (hit,) = rank_keyword([Candidate(memory=stale, bm25_rank=None, bm25=-1.0)], CUTS, POLICY)
    assert hit.signals.tier is Tier.EXPIRED


def test_recency_halves_per_half_life() -> None:
    assert recency_signal(0, POLICY) == 1.0
    assert recency_signal(POLICY.recency_half_life_hours, POLICY) == 0.5


@given(st.lists(st.tuples(st.floats(-50, 0), st.integers(0, 90 * 24 * 3600)), max_size=40))
def test_every_match_ranked_once_in_non_increasing_score(rows: list[tuple[float, int]]) -> None:
    matches = [
        Candidate(memory=memory(i, timedelta(seconds=age)), bm25_rank=None, bm25=bm25)
        for i, (bm25, age) in enumerate(rows)
    ]
    hits = rank_keyword(matches, CUTS, POLICY)
    assert sorted(h.memory.id for h in hits) == list(range(len(rows)))
    scores = [h.signals.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_fusion_rewards_agreement_between_lists() -> None:
    fused = fuse_ranks({"keyword": [1, 2, 3], "vector": [3, 4, 1]}, {}, k=60)
    assert max(fused, key=fused.__getitem__) in (1, 3)
    assert fused[1] > fused[2] and fused[3] > fused[4]


def test_fusion_weights_shift_the_balance() -> None:
    fused = fuse_ranks({"keyword": [1], "vector": [2]}, {"keyword": 1.0, "vector": 2.0}, k=60)
    assert fused[2] == 2 * fused[1]


@given(
    st.lists(st.integers(0, 30), unique=True, max_size=20),
    st.lists(st.integers(0, 30), unique=True, max_size=20),
)
def test_fusion_returns_every_id_once(keyword: list[int], vector: list[int]) -> None:
    fused = fuse_ranks({"keyword": keyword, "vector": vector}, {}, k=60)
    assert set(fused) == set(keyword) | set(vector)


@given(st.lists(st.tuples(st.integers(1, 50), st.floats(0, 2)), max_size=30))
def test_hybrid_ranking_is_a_permutation_in_score_order(rows: list[tuple[int, float]]) -> None:
    candidates = [
        Candidate(
            memory=memory(i, timedelta(hours=i)),
            bm25_rank=i + 1 if i % 2 else None,
            bm25=-1.0,
            vector_rank=rank,
            vector_distance=dist,
        )
        for i, (rank, dist) in enumerate(rows)
    ]
    hits = rank_candidates(candidates, SearchMode.HYBRID, CUTS, POLICY)
    assert sorted(h.memory.id for h in hits) == list(range(len(rows)))
    scores = [h.signals.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= h.signals.relevance <= 1 for h in hits)


def _mixed_candidates(rows: list[tuple[int, float, int]]) -> list[Candidate]:
    """Candidates from (vector rank, distance, age in hours); every third has no BM25 rank."""
    return [
        Candidate(
            memory=memory(i, timedelta(hours=hours)),
            bm25_rank=i + 1 if i % 3 else None,
            bm25=-1.0,
            vector_rank=rank,
            vector_distance=dist,
        )
        for i, (rank, dist, hours) in enumerate(rows)
    ]


@given(
    st.lists(st.tuples(st.integers(1, 50), st.floats(0, 2), st.integers(0, 400)), max_size=40),
    st.integers(0, 45),
)
def test_a_limit_returns_the_head_of_the_full_ranking(
    rows: list[tuple[int, float, int]], limit: int
) -> None:
    # Ties in score (equal ages, equal distances) must still break by the newer id.
    candidates = _mixed_candidates(rows)
    full = rank_candidates(candidates, SearchMode.HYBRID, CUTS, POLICY)
    assert rank_candidates(candidates, SearchMode.HYBRID, CUTS, POLICY, limit) == full[:limit]


@given(
    st.lists(st.tuples(st.integers(1, 50), st.floats(0, 2), st.integers(0, 2000)), max_size=40),
    st.integers(1, 12),
)
def test_each_hits_signals_add_up_to_its_score(
    rows: list[tuple[int, float, int]], limit: int
) -> None:
    # The score of every candidate is worked out first and the signals' parts only for the
    # hits: both must come from the same numbers.
    candidates = _mixed_candidates(rows)
    hits = rank_candidates(candidates, SearchMode.HYBRID, CUTS, POLICY, limit)
    boosts = {
        Tier.ACTIVE: POLICY.active_boost,
        Tier.RECENT: POLICY.recent_boost,
        Tier.ARCHIVED: POLICY.archived_boost,
        Tier.EXPIRED: POLICY.expired_boost,
    }
    for hit in hits:
        s = hit.signals
        reference = hit.memory.reference_time
        assert s.tier is classify_tier(reference, CUTS)
        assert s.tier_boost == boosts[s.tier]
        age = (NOW - reference).total_seconds() / 3600
        assert s.recency == round(recency_signal(age, POLICY), 6)
        assert s.score == pytest.approx(
            s.relevance + s.tier_boost + POLICY.recency_weight * s.recency, abs=2e-6
        )


def test_semantic_relevance_is_similarity_relative_to_the_best() -> None:
    hits = rank_candidates(
        [
            Candidate(memory=memory(1, timedelta(days=3)), vector_rank=1, vector_distance=0.2),
            Candidate(memory=memory(2, timedelta(days=3)), vector_rank=2, vector_distance=0.6),
        ],
        SearchMode.SEMANTIC,
        CUTS,
        POLICY,
    )
    assert [h.signals.relevance for h in hits] == [1.0, 0.5]


def test_convex_fusion_blends_normalised_scores() -> None:
    policy = RankingPolicy(fusion="convex", keyword_weight=1.0, vector_weight=1.0)
    hits = rank_candidates(
        [
            Candidate(memory=memory(1, timedelta(days=3)), bm25_rank=1, bm25=-4.0),
            Candidate(memory=memory(2, timedelta(days=3)), vector_rank=1, vector_distance=0.1),
            Candidate(
                memory=memory(3, timedelta(days=3)),
                bm25_rank=2,
                bm25=-2.0,
                vector_rank=2,
                vector_distance=0.3,
            ),
        ],
        SearchMode.HYBRID,
        CUTS,
        policy,
    )
    # Min-max puts 3 (worst in both lists) at 0 in each; 1 and 2 top one list each.
    assert {h.memory.id for h in hits[:2]} == {1, 2}
    assert hits[2].memory.id == 3


def in_session(mid: int, session: str | None) -> Memory:
    return memory(mid, timedelta(days=3)).model_copy(update={"session_id": session})


# The session lift's tests leave out the follow-up lift (tested on its own below): turns of
# one session would otherwise also lift the ones before them.
SESSION_ONLY = RankingPolicy(follow_weight=0)


def keyword_hits(rows: list[tuple[Memory, float]], policy: RankingPolicy = SESSION_ONLY):
    return rank_keyword(
        [Candidate(memory=m, bm25_rank=None, bm25=bm25) for m, bm25 in rows], CUTS, policy
    )


def test_a_weak_match_beside_strong_ones_in_its_session_outranks_an_equal_loner() -> None:
    hits = keyword_hits(
        [
            (in_session(1, "s1"), -5.0),
            (in_session(2, "s1"), -4.0),
            (in_session(3, "s1"), -1.0),  # weak, but its session matched strongly
            (in_session(4, "s2"), -1.2),  # a little stronger, alone in its session
            (in_session(5, None), -1.1),
        ]
    )
    assert [h.memory.id for h in hits] == [1, 2, 3, 4, 5]
    lifted, loner, sessionless = hits[2].signals, hits[3].signals, hits[4].signals
    assert lifted.session_lift > 0 == loner.session_lift == sessionless.session_lift
    assert lifted.relevance == max(h.signals.relevance for h in hits[2:])


def test_without_the_lift_the_text_score_alone_decides() -> None:
    rows = [(in_session(1, "s1"), -5.0), (in_session(3, "s1"), -1.0), (in_session(4, "s2"), -1.2)]
    hits = keyword_hits(rows, RankingPolicy(session_weight=0, follow_weight=0))
    assert [h.memory.id for h in hits] == [1, 4, 3]
    assert all(h.signals.session_lift == 0 for h in hits)


def test_memories_without_a_session_never_lift_one_another() -> None:
    hits = keyword_hits(
        [
            (in_session(1, None), -5.0),
            (in_session(2, None), -1.0),
            (in_session(3, "s1"), -2.0),
            (in_session(4, "s1"), -2.0),
        ]
    )
    by_id = {h.memory.id: h.signals for h in hits}
    assert by_id[1].session_lift == by_id[2].session_lift == 0
    assert by_id[3].session_lift > 0
    # Neither lifts the other: their relevance keeps the ratio of their text scores
    # (ranks 1 and 4: 1/11 and 1/14).
    assert abs(by_id[2].relevance - by_id[1].relevance * 11 / 14) < 1e-5


def test_a_search_inside_one_session_gets_no_lift() -> None:
    hits = keyword_hits([(in_session(1, "s1"), -4.0), (in_session(2, "s1"), -2.0)])
    assert [h.signals.relevance for h in hits] == [1.0, round(11 / 12, 6)]
    assert all(h.signals.session_lift == 0 for h in hits)


def test_session_strength_is_the_mean_of_its_best_few() -> None:
    policy = RankingPolicy(session_weight=1.0, session_top=2)
    candidates = [
        Candidate(memory=in_session(1, "s1"), bm25=-4.0),
        Candidate(memory=in_session(2, "s1"), bm25=-2.0),
        Candidate(memory=in_session(3, "s1"), bm25=-1.0),
        Candidate(memory=in_session(4, "s2"), bm25=-3.0),
        Candidate(memory=in_session(5, None), bm25=-2.0),
    ]
    lifts = session_lift(candidates, [4.0, 2.0, 1.0, 3.0, 2.0], policy)
    # s1's strength is (4 + 2) / 2 = 3, less each memory's own share (score / 2); s2 holds
    # one candidate (the missing second counts as 0), so nothing is left once its own share
    # is taken; a memory without a session gets nothing.
    assert lifts == [1.0, 2.0, 2.5, 0.0, 0.0]


@given(
    st.lists(
        st.tuples(st.floats(-50, -0.01), st.sampled_from([None, "a", "b", "c"])),
        min_size=1,
        max_size=30,
    )
)
def test_lifted_ranking_is_a_permutation_with_relevance_in_unit_range(
    rows: list[tuple[float, str | None]],
) -> None:
    hits = keyword_hits([(in_session(i, s), bm25) for i, (bm25, s) in enumerate(rows)])
    assert sorted(h.memory.id for h in hits) == list(range(len(rows)))
    assert [h.signals.score for h in hits] == sorted((h.signals.score for h in hits), reverse=True)
    assert all(0 < h.signals.relevance <= 1 for h in hits)
    assert all(0 <= h.signals.session_lift < h.signals.relevance for h in hits)


def test_follow_lift_is_the_next_session_candidates_share_of_the_best() -> None:
    policy = RankingPolicy(follow_weight=0.5)
    candidates = [
        Candidate(memory=in_session(3, "s1")),  # listed out of order: ids give the order
        Candidate(memory=in_session(1, "s1")),
        Candidate(memory=in_session(2, "s1")),
        Candidate(memory=in_session(4, "s2")),  # the last of its session
        Candidate(memory=in_session(5, None)),  # no session: nothing follows it
        Candidate(memory=in_session(6, "s2")),
    ]
    text = [1.0, 0.2, 2.0, 0.5, 1.5, 0.4]
    totals = [t * 3 for t in text]
    # Best text 2.0, best total 6.0: a lift is 0.5 x (next's text / 2.0) x 6.0.
    lifts = follow_lifts(candidates, text, totals, policy)
    assert lifts == pytest.approx([0.0, 3.0, 1.5, 0.6, 0.0, 0.0])
    assert follow_lifts(candidates, text, totals, SESSION_ONLY) == [0.0] * 6


def test_a_question_is_lifted_by_the_reply_that_answers_it() -> None:
    rows = [
        (in_session(1, "s1"), -5.0),  # the reply, matching the query best
        (in_session(2, "s2"), -3.0),  # fair matches elsewhere
        (in_session(3, "s3"), -2.5),
        (in_session(0, "s1"), -1.0),  # the question the reply answers: weak on its own
    ]
    off = RankingPolicy(session_weight=0, follow_weight=0)
    assert [h.memory.id for h in keyword_hits(rows, off)] == [1, 2, 3, 0]
    # Keyword scores 1/11, 1/12, 1/13, 1/14 (k = 10): 0.1 x the best lifts the question past
    # 3 (1/14 + 0.1/11 > 1/13), not past 2 (< 1/12); 0.2 lifts it past both, not the reply.
    hits = keyword_hits(rows, RankingPolicy(session_weight=0, follow_weight=0.1))
    assert [h.memory.id for h in hits] == [1, 2, 0, 3]
    hits = keyword_hits(rows, RankingPolicy(session_weight=0, follow_weight=0.2))
    assert [h.memory.id for h in hits] == [1, 0, 2, 3]
    follow = {h.memory.id: h.signals.follow_lift for h in hits}
    # Only the question is followed by another candidate of its session.
    assert follow[0] > 0 == follow[1] == follow[2] == follow[3]


@pytest.mark.parametrize(
    ("author", "query", "named"),
    [
        ("Caroline", "When did Caroline go to the support group?", True),
        ("Caroline", "What did caroline's friend say?", True),
        ("Ada Lovelace", "What did Ada say about engines?", True),
        ("Ada Lovelace", "Lovelace, Ada: her notes", True),
        ("Ada Lovelace", "What did Lovelace write?", False),
        ("assistant", "what did the assistant suggest", True),
        ("Carol", "When did Caroline go?", False),
        (None, "anything", False),
        ("", "anything", False),
    ],
)
def test_author_named(author: str | None, query: str, named: bool) -> None:
    assert author_named(author, name_words(query)) is named


def test_keyword_scores_depend_on_ranks_only_not_on_bm25_values() -> None:
    # FTS5's BM25 values move with every project's rows; two lists in the same order must
    # give the same answer, numbers included, however far apart their values are.
    near = [(memory(1, timedelta(days=3)), -4.0), (memory(2, timedelta(days=4)), -3.9)]
    far = [(memory(1, timedelta(days=3)), -400.0), (memory(2, timedelta(days=4)), -0.1)]
    for mode_policy in (POLICY, RankingPolicy(fusion="convex")):
        answers = [
            rank_keyword([Candidate(memory=m, bm25=b) for m, b in rows], CUTS, mode_policy)
            for rows in (near, far)
        ]
        assert answers[0] == answers[1]
    assert "bm25" not in answers[0][0].signals.model_dump()


def _dated_memory(mid: int, content: str, dates: str | None, said: datetime) -> Candidate:
    m = make_memory(mid, NOW, content=content).model_copy(
        update={"dates": dates, "occurred_at": said}
    )
    return Candidate(memory=m, bm25_rank=mid)


SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_a_named_time_lifts_memories_whose_dates_or_day_fit_it() -> None:
    from memory_core.domain.dates import query_time

    candidates = [
        _dated_memory(1, "the group was great", None, SAID),  # said in May 2023
        # Said in June, of a day in April.
        _dated_memory(2, "went to the group then", "2023-04-30", datetime(2023, 6, 1, tzinfo=UTC)),
        _dated_memory(3, "a group in June", None, datetime(2023, 6, 9, tzinfo=UTC)),
    ]
    may = query_time("What happened at the group in May 2023?", SAID)
    hits = rank_candidates(candidates, SearchMode.KEYWORD, CUTS, POLICY, query_time=may)
    lifted = {h.memory.id: h.signals.date_lift for h in hits}
    assert lifted[1] > 0 and lifted[2] == 0 and lifted[3] == 0
    april = query_time("in April 2023", SAID)
    hits = rank_candidates(candidates, SearchMode.KEYWORD, CUTS, POLICY, query_time=april)
    assert hits[0].memory.id == 2 and hits[0].signals.date_lift > 0
    off = RankingPolicy(date_weight=0)
    hits = rank_candidates(candidates, SearchMode.KEYWORD, CUTS, off, query_time=april)
    assert hits[0].memory.id == 1 and all(h.signals.date_lift == 0 for h in hits)


def test_a_when_question_lifts_memories_that_say_when_something_happened() -> None:
    from memory_core.domain.dates import query_time

    candidates = [
        # Its only date is the day it was said (the benchmark's dated text): no answer to "when".
        _dated_memory(1, "(8 May 2023) the support group", "2023-05-08", SAID),
        _dated_memory(2, "support group yesterday", "2023-05-07", SAID),
    ]
    when = query_time("When did she go to the support group?", SAID)
    hits = rank_candidates(candidates, SearchMode.KEYWORD, CUTS, POLICY, query_time=when)
    assert hits[0].memory.id == 2
    assert hits[0].signals.date_lift > 0 and hits[1].signals.date_lift == 0
    what = query_time("What did she do at the support group?", SAID)
    hits = rank_candidates(candidates, SearchMode.KEYWORD, CUTS, POLICY, query_time=what)
    assert hits[0].memory.id == 1 and all(h.signals.date_lift == 0 for h in hits)
    # Every candidate fits: a lift alike for all would change nothing but the scale.
    both = [candidates[1], _dated_memory(3, "group last week", "2023-05-01..2023-05-07", SAID)]
    hits = rank_candidates(both, SearchMode.KEYWORD, CUTS, POLICY, query_time=when)
    assert all(h.signals.date_lift == 0 for h in hits)
