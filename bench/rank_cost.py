"""What the author lift and the match bands add to ranking one search (a benchmark, not a test).

    python -m bench.rank_cost [--candidates 200] [--rounds 2000]

Ranks the same candidate set (LoCoMo-sized texts of ~40 words, half keyword and half vector
candidates, 20 sessions, 2 authors) the way a hybrid search with `limit=10` does, with the
signals of issue 20 off (author_weight and follow_weight 0, no query words: the ranking before
it) and on (the defaults), interleaved round by round so machine load hits both alike. Prints
the medians.
Pure CPU in one thread; the search's I/O (keyword and vector queries, query embedding) is
unchanged by these signals.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from memory_core.config import RankingPolicy, TierPolicy
from memory_core.domain.fts_query import search_words
from memory_core.domain.models import Layer, Memory, SearchMode, Tier
from memory_core.domain.ranking import Candidate, name_words, rank_candidates
from memory_core.domain.tiers import tier_cutoffs

NOW = datetime(2026, 3, 1, tzinfo=UTC)
QUESTION = "When did Caroline go to the LGBTQ support group with her friends?"


def candidates(n: int, seed: int = 7) -> list[Candidate]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)] + ["support", "group", "caroline", "friends"]
    out = []
    for i in range(n):
        words = " ".join(rng.choice(vocab) for _ in range(40))
        memory = Memory(
            id=i + 1,
            project="p",
            layer=Layer.EPISODIC,
            key=None,
            content=f"(8 May 2023) Caroline: {words}",
            metadata={},
            session_id=f"s{i % 20}",
            created_at=NOW - timedelta(days=rng.randint(0, 100)),
            updated_at=NOW,
            last_accessed=None,
            access_count=0,
            tier=Tier.ACTIVE,
            content_hash=str(i),
            token_count=50,
            author=("Caroline", "Melanie")[i % 2],
        )
        keyword = i % 2 == 0 or i < 20
        vector = i % 2 == 1 or i < 20
        out.append(
            Candidate(
                memory=memory,
                bm25_rank=i + 1 if keyword else None,
                bm25=-10.0 + i * 0.01 if keyword else None,
                vector_rank=i + 1 if vector else None,
                vector_distance=0.3 + i * 0.001 if vector else None,
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)
    pool = candidates(args.candidates)
    cuts = tier_cutoffs(NOW, TierPolicy())
    before = RankingPolicy(author_weight=0, follow_weight=0)
    after = RankingPolicy()
    words = search_words(QUESTION, drop_stopwords=True)
    named = name_words(QUESTION)
    times: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        t = time.perf_counter()
        rank_candidates(pool, SearchMode.HYBRID, cuts, before, 10)
        times["before"].append(time.perf_counter() - t)
        t = time.perf_counter()
        rank_candidates(
            pool, SearchMode.HYBRID, cuts, after, 10, query_words=named, search_terms=words
        )
        times["after"].append(time.perf_counter() - t)
    for name, values in times.items():
        print(f"{name}: p50 {statistics.median(values) * 1000:.3f} ms")


if __name__ == "__main__":
    main()
