"""Ranking: fuse keyword and vector candidates, then apply the tier and recency signals."""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import pairwise

from pydantic import BaseModel, ConfigDict

from memory_core.config.policies import RankingPolicy
from memory_core.domain.dates import QueryTime, Span, parse_spans, spans_overlap
from memory_core.domain.hook_session import SESSION_SUMMARY_KIND
from memory_core.domain.match import Match, MatchThresholds, match_strength, word_share
from memory_core.domain.models import Memory, RankSignals, SearchHit, SearchMode, Tier, TierCutoffs
from memory_core.domain.tiers import classify_tier

__all__ = [
    "Candidate",
    "author_named",
    "follow_lifts",
    "fuse_phrasings",
    "fuse_ranks",
    "name_words",
    "rank_candidates",
    "recency_signal",
    "session_lift",
    "tier_boost",
]


class Candidate(BaseModel):
    """A memory retrieved by one or both lists, with its place in each."""

    model_config = ConfigDict(frozen=True)

    memory: Memory
    bm25_rank: int | None = None
    # The store's raw keyword score: orders the project's keyword list, never reported or
    # scored (FTS5 computes it over every project; see `_keyword_rank_scores`).
    bm25: float | None = None
    vector_rank: int | None = None
    vector_distance: float | None = None


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


def fuse_ranks(
    ranked: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: float
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion: sum over lists of weight / (k + rank).

    Rank-based, so BM25 values and cosine distances need no common scale; an id found by both
    lists outranks one found by a single list at a similar rank.
    """
    fused: dict[int, float] = {}
    for name, ids in ranked.items():
        weight = weights.get(name, 1.0)
        for rank, item in enumerate(ids, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def _min_max(values: Sequence[float | None]) -> list[float]:
    present = [v for v in values if v is not None]
    if not present:
        return [0.0] * len(values)
    low, high = min(present), max(present)
    return [
        0.0 if v is None else (1.0 if high == low else (v - low) / (high - low)) for v in values
    ]


def _keyword_rank_scores(candidates: Sequence[Candidate], policy: RankingPolicy) -> list[float]:
    """1 / (k + rank) in the project's keyword list; 0 for a candidate not in it.

    BM25 *values* are never scored: SQLite's FTS5 computes them with the document counts and
    average length of every project in the table, so a score built from them would move when
    another project gains rows holding the query's words (a channel between projects). The
    rank within the project's own list carries the keyword evidence instead.
    """
    return [0.0 if c.bm25_rank is None else 1.0 / (policy.rrf_k + c.bm25_rank) for c in candidates]


def _convex(candidates: Sequence[Candidate], policy: RankingPolicy) -> list[float]:
    """Score as a * keyword + (1 - a) * cosine, each min-max normalised over this candidate set.

    The keyword part is the reciprocal rank (see `_keyword_rank_scores`), not BM25. A
    candidate missing from one list scores 0 there; `a` is the keyword weight's share.
    """
    keyword = _min_max(
        [
            None if c.bm25_rank is None else s
            for c, s in zip(candidates, _keyword_rank_scores(candidates, policy), strict=True)
        ]
    )
    vector = _min_max(
        [None if c.vector_distance is None else 1.0 - c.vector_distance for c in candidates]
    )
    total = policy.keyword_weight + policy.vector_weight
    alpha = policy.keyword_weight / total if total > 0 else 0.5
    # A small floor keeps every candidate's relevance positive, so ties still order by signals.
    return [alpha * k + (1 - alpha) * v + 1e-6 for k, v in zip(keyword, vector, strict=True)]


def _text_scores(
    candidates: Sequence[Candidate], mode: SearchMode, policy: RankingPolicy
) -> list[float]:
    """Each candidate's text score (bigger is better), on the scale of its mode."""
    if mode is SearchMode.KEYWORD:
        # Ranks, not BM25 values: no other project's rows may move a score.
        return _keyword_rank_scores(candidates, policy)
    if mode is SearchMode.SEMANTIC:
        return [
            max(1.0 - (c.vector_distance if c.vector_distance is not None else 1.0), 0.0)
            for c in candidates
        ]
    if policy.fusion == "convex":
        return _convex(candidates, policy)
    fused = fuse_ranks(
        {
            "keyword": [
                c.memory.id
                for c in sorted(
                    (c for c in candidates if c.bm25_rank is not None),
                    key=lambda c: c.bm25_rank or 0,
                )
            ],
            "vector": [
                c.memory.id
                for c in sorted(
                    (c for c in candidates if c.vector_rank is not None),
                    key=lambda c: c.vector_rank or 0,
                )
            ],
        },
        {"keyword": policy.keyword_weight, "vector": policy.vector_weight},
        policy.rrf_k,
    )
    return [fused.get(c.memory.id, 0.0) for c in candidates]


def session_lift(
    candidates: Sequence[Candidate], text_scores: Sequence[float], policy: RankingPolicy
) -> list[float]:
    """What the rest of its session adds to each candidate's text score.

    A memory's score becomes its text score plus `session_weight` x its session's strength:
    the mean text score of the session's best `session_top` candidates (fewer count as zeros,
    so one lucky match is not a strong session). The memory counts in its own session, so
    that sum splits into its own share, `score x weight / top` (every candidate has one, see
    `rank_candidates`), and what the others add, which this returns. Memories written in one
    session share its subject: on LoCoMo the evidence for a question sits in one or two
    sessions, and a turn that matches weakly beside strong matches is often part of the
    answer (+0.019 R@10 on the dev split; docs/benchmarks.md). A memory without a session,
    or alone in its session among the candidates, gets nothing. When every candidate is from
    one session (a search filtered to it), the lift would be alike for all and only blunt the
    text scores against the tier signals, so there is none.
    """
    by_session: dict[str, list[float]] = defaultdict(list)
    for c, score in zip(candidates, text_scores, strict=True):
        if c.memory.session_id is not None:
            by_session[c.memory.session_id].append(score)
    one_session = len(by_session) == 1 and all(c.memory.session_id is not None for c in candidates)
    if policy.session_weight == 0 or one_session:
        return [0.0] * len(candidates)
    top = policy.session_top
    strength = {s: sum(heapq.nlargest(top, scores)) / top for s, scores in by_session.items()}
    return [
        0.0
        if c.memory.session_id is None
        # Never negative: the memory is either among the best `top` or below all of them.
        else policy.session_weight * (strength[c.memory.session_id] - score / top)
        for c, score in zip(candidates, text_scores, strict=True)
    ]


def follow_lifts(
    candidates: Sequence[Candidate],
    text_scores: Sequence[float],
    totals: Sequence[float],
    policy: RankingPolicy,
) -> list[float]:
    """What the memory that follows each candidate in its session adds to it.

    A candidate gains `follow_weight` x the next candidate of its session's share of the best
    text score, times the best total: a memory whose follow-up matches the query is part of the
    answer (a question and the reply that answers it, a step and the note on how it went). The
    next memory is the session's next candidate by id (the order of writing); a memory
    without a session, or the last of its session, gets nothing. On LoCoMo dev it raises R@5
    by 0.011 and multi-hop R@10 by 0.009 (docs/benchmarks.md, "The memory that follows").
    """
    none = [0.0] * len(candidates)
    best_text = max(text_scores, default=0.0)
    if policy.follow_weight == 0 or best_text <= 0:
        return none
    by_session: dict[str, list[int]] = defaultdict(list)
    for n, c in enumerate(candidates):
        if c.memory.session_id is not None:
            by_session[c.memory.session_id].append(n)
    scale = policy.follow_weight * max(totals, default=0.0) / best_text
    lifts = [0.0] * len(candidates)
    for members in by_session.values():
        members.sort(key=lambda n: candidates[n].memory.id)
        for here, after in pairwise(members):
            lifts[here] = scale * text_scores[after]
    return lifts


def name_words(text: str) -> frozenset[str]:
    """The lowercased words of a text, as `author_named` compares them."""
    return frozenset(re.findall(r"[^\W_]+", text.casefold()))


def author_named(author: str | None, query_words: frozenset[str]) -> bool:
    """Whether a query names an author: all words of the name, or its first word, appear.

    People are mostly called by their first name ("What did Caroline ..."), so the first word
    alone counts; "Ada Lovelace" is named by "Ada" and by "Lovelace, Ada", not by "Lovelace".
    """
    if not author:
        return False
    words = re.findall(r"[^\W_]+", author.casefold())
    return bool(words) and (words[0] in query_words or all(w in query_words for w in words))


def _author_lifts(
    candidates: Sequence[Candidate],
    totals: Sequence[float],
    query_words: frozenset[str],
    policy: RankingPolicy,
) -> list[float]:
    """`author_weight` x the best total for each candidate whose author the query names.

    Questions about a person ("When did Caroline ...") are mostly answered by what that person
    said: on LoCoMo dev the lift raised MRR by 0.07 (docs/benchmarks.md). When every candidate
    is named (a store of one author) the lift would be alike for all, so there is none.
    """
    if policy.author_weight == 0 or not query_words:
        return [0.0] * len(candidates)
    # A store has few authors: each is checked once, not once per candidate.
    by_author = {a: author_named(a, query_words) for a in {c.memory.author for c in candidates}}
    named = [by_author[c.memory.author] for c in candidates]
    if not any(named) or all(named):
        return [0.0] * len(candidates)
    lift = policy.author_weight * max(totals, default=0.0)
    return [lift if n else 0.0 for n in named]


def _dated(memory: Memory, query: QueryTime) -> bool:
    """Whether a memory matches the time a query names, or answers its "when".

    A named time matches the dates the memory's text mentions or the day it was said. A
    "when" is answered by a memory that mentions a day other than the one it was said on
    ("yesterday", "last summer", "on 7 May"): the day itself every memory has.
    """
    said = memory.happened_at.date()
    if query.spans:
        return spans_overlap(parse_spans(memory.dates), query.spans) or spans_overlap(
            (Span(said, said),), query.spans
        )
    return any(s.start != said or s.end != said for s in parse_spans(memory.dates))


def _date_lifts(
    candidates: Sequence[Candidate],
    totals: Sequence[float],
    query: QueryTime | None,
    policy: RankingPolicy,
) -> list[float]:
    """A share of the best total for each candidate whose dates fit the query's time.

    `date_weight` when the query names a time ("in May 2023", "last summer") that some
    candidates fit, else `when_weight` when it asks when ("When did we go camping in June?"
    asks when even if no June fits); nothing when no candidate fits, or all of them do (a lift
    alike for all would change nothing but the scale).
    """
    none = [0.0] * len(candidates)
    if query is None:
        return none
    for weight, asked in (
        (policy.date_weight, query if query.spans else None),
        (policy.when_weight, QueryTime() if query.asks_when else None),
    ):
        if asked is None or weight == 0:
            continue
        fits = [_dated(c.memory, asked) for c in candidates]
        if any(fits) and not all(fits):
            lift = weight * max(totals, default=0.0)
            return [lift if f else 0.0 for f in fits]
    return none


def rank_candidates(
    candidates: Sequence[Candidate],
    mode: SearchMode,
    cutoffs: TierCutoffs,
    policy: RankingPolicy,
    limit: int | None = None,
    query_words: frozenset[str] = frozenset(),
    search_terms: Sequence[str] = (),
    min_match: Match | None = None,
    query_time: QueryTime | None = None,
) -> tuple[list[SearchHit], int]:
    """Score candidates and return them (the best `limit` of them, when given) best first.

    Relevance (BM25, cosine similarity, or their fusion, per `mode` and `policy.fusion`, plus
    the lift from the memory's session, see `session_lift`) is divided by the best relevance
    among the candidates, so it lies in (0, 1] and the tier boosts (+0.3 ACTIVE ... -0.2
    EXPIRED) weigh the same whatever the query. One exception: the lift narrows the gaps
    between members of a strong session (a shared lift of 0.25 turns 1.0 / 0.5 into
    1.0 / 0.6), so among them tier and recency count for a little more. Memories whose author
    `query_words` name are lifted after that (see `_author_lifts`), and so are those whose
    dates fit `query_time` (see `_date_lifts`) and those whose follow-up in their session
    matches (see `follow_lifts`). Tiers are classified
    live from the reference time, so a stale stored tier cannot skew the ranking. Ties keep
    the newer memory first.

    Each hit returned carries its absolute match strength (`match_of`); with `min_match`,
    hits below it are left out (and the best `limit` of the rest returned). Returns the hits
    and how many `min_match` left out.

    Scores are plain floats until the order is known; only the hits returned become models
    (a hybrid search ranks ~90 candidates to return 10: building all of them cost ~0.6 ms).
    """
    text_scores = _text_scores(candidates, mode, policy)
    if policy.digest_weight != 1.0:
        # A session's digest repeats what its turns said: the turns rank first.
        text_scores = [
            t * policy.digest_weight if _is_digest(c.memory) else t
            for c, t in zip(candidates, text_scores, strict=True)
        ]
    lifts = session_lift(candidates, text_scores, policy)
    # Each memory's own share of its session's strength; the same factor for every candidate.
    own = 1 + policy.session_weight / policy.session_top
    totals = [own * t + lift for t, lift in zip(text_scores, lifts, strict=True)]
    by_author = _author_lifts(candidates, totals, query_words, policy)
    # The lifts are shares of the same best total (before any), so none scales another.
    by_date = _date_lifts(candidates, totals, query_time, policy)
    followed = follow_lifts(candidates, text_scores, totals, policy)
    totals = [
        t + a + d + f for t, a, d, f in zip(totals, by_author, by_date, followed, strict=True)
    ]
    best = max(totals, default=0.0)
    boosts = {tier: tier_boost(tier, policy) for tier in Tier}
    # Only the score of each candidate first: ~90 are ranked for 10 hits, and the parts of the
    # signals are worked out (with the same arithmetic) for the hits alone.
    scores: list[float] = []
    tiers: list[Tier] = []
    recencies: list[float] = []
    for c, total in zip(candidates, totals, strict=True):
        relevance = total / best if best > 0 else 1.0
        reference = c.memory.reference_time
        tier = classify_tier(reference, cutoffs)
        recency = recency_signal((cutoffs.now - reference).total_seconds() / 3600, policy)
        scores.append(round(relevance + boosts[tier] + policy.recency_weight * recency, 6))
        tiers.append(tier)
        recencies.append(recency)
    # The order the signals' rounded score gives, ties to the newer (higher) id.
    order = sorted(range(len(candidates)), key=lambda n: (-scores[n], -candidates[n].memory.id))
    thresholds = match_thresholds(policy)
    hits: list[SearchHit] = []
    dropped = 0
    for n in order:
        c = candidates[n]
        if limit is not None and len(hits) >= limit:
            break
        share = word_share(search_terms, _searchable(c.memory))
        cosine = None if c.vector_distance is None else 1.0 - c.vector_distance
        match = match_strength(cosine, share, thresholds)
        if min_match is not None and match.order < min_match.order:
            dropped += 1
            continue
        relevance, session_part, author_part, date_part, follow_part = (
            (
                totals[n] / best,
                lifts[n] / best,
                by_author[n] / best,
                by_date[n] / best,
                followed[n] / best,
            )
            if best > 0
            else (1.0, 0.0, 0.0, 0.0, 0.0)
        )
        signals = RankSignals(
            bm25_rank=c.bm25_rank,
            vector_rank=c.vector_rank,
            vector_distance=None if c.vector_distance is None else round(c.vector_distance, 6),
            relevance=round(relevance, 6),
            session_lift=round(session_part, 6),
            author_lift=round(author_part, 6),
            date_lift=round(date_part, 6),
            follow_lift=round(follow_part, 6),
            match=match,
            word_share=round(share, 4),
            tier=tiers[n],
            tier_boost=boosts[tiers[n]],
            recency=round(recencies[n], 6),
            score=scores[n],
        )
        hits.append(SearchHit(memory=c.memory, signals=signals))
    return hits, dropped


def _is_digest(memory: Memory) -> bool:
    return memory.metadata.get("kind") == SESSION_SUMMARY_KIND


def _searchable(memory: Memory) -> str:
    """The text a hit's word share is counted in: what the keyword index holds but metadata."""
    return " ".join(filter(None, (memory.content, memory.key, memory.author)))


def match_thresholds(policy: RankingPolicy) -> MatchThresholds:
    """The match bands' thresholds of a ranking policy."""
    return MatchThresholds(
        strong_cosine=policy.match_strong_cosine,
        partial_cosine=policy.match_partial_cosine,
        strong_words=policy.match_strong_words,
        partial_words=policy.match_partial_words,
    )


def fuse_phrasings(lists: Sequence[Sequence[SearchHit]], k: float) -> list[SearchHit]:
    """Hits of several phrasings of one question, fused by reciprocal rank, best first.

    Each phrasing's list is ranked as a single query would be (tiers, sessions, authors
    included); a memory found by several phrasings, or high by one, comes first. A hit keeps
    the signals of the phrasing that ranked it highest, with the strongest match any phrasing
    gave it. Ties keep the newer memory first.
    """
    fused = fuse_ranks({str(n): [h.memory.id for h in hits] for n, hits in enumerate(lists)}, {}, k)
    best: dict[int, tuple[int, SearchHit]] = {}
    strongest: dict[int, SearchHit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits):
            mid = hit.memory.id
            if mid not in best or rank < best[mid][0]:
                best[mid] = (rank, hit)
            if mid not in strongest or hit.signals.match.order > (
                strongest[mid].signals.match.order
            ):
                strongest[mid] = hit
    order = sorted(fused, key=lambda mid: (-fused[mid], -mid))
    out: list[SearchHit] = []
    for mid in order:
        hit = best[mid][1]
        top = strongest[mid].signals
        if top.match is not hit.signals.match:
            signals = hit.signals.model_copy(
                update={
                    "match": top.match,
                    "word_share": max(top.word_share, hit.signals.word_share),
                }
            )
            hit = SearchHit(memory=hit.memory, signals=signals)
        out.append(hit)
    return out
