"""The default thresholds of the shared-pattern match, on labelled pairs with the real model.

tests/data/shared_pattern_pairs.json holds 20 pairs that state one pattern in two tenants'
words and 24 near misses. Measured (docs/business_context.md): every same pair has cosine
>= 0.924 and word overlap >= 0.83; the near misses that pass both (weeks/days, a reversed
preference) are the ones the word rule or k has to stop.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.pattern_pool import PoolPassage, PoolRule, holds, pool_patterns
from memory_core.embeddings import load_embedder, parse_embedding_model

DATA = json.loads((Path(__file__).parent.parent / "data" / "shared_pattern_pairs.json").read_text())
POLICY = KnowledgePolicy()
RULE = PoolRule(
    min_tenants=POLICY.shared_min_tenants,
    similarity=POLICY.shared_similarity,
    word_overlap=POLICY.shared_word_overlap,
)


def matches(pairs: list[list[str]]) -> list[bool]:
    embedder = load_embedder(parse_embedding_model("default"))
    a = embedder.embed([p[0] for p in pairs])
    b = embedder.embed([p[1] for p in pairs])
    cosines = np.sum(a * b, axis=1)
    return [holds(x, y, float(c), RULE) for (x, y), c in zip(pairs, cosines, strict=True)]


def test_every_same_pattern_pair_matches_and_near_misses_rarely_do() -> None:
    assert all(matches(DATA["same"]))
    passed = [p for p, ok in zip(DATA["different"], matches(DATA["different"]), strict=True) if ok]
    # Measured: 2 of 24 (a number changed, a preference reversed); both reuse every word.
    assert len(passed) <= 2, passed


def test_the_near_miss_that_passes_the_match_is_stopped_by_the_word_rule() -> None:
    weeks, days = next(p for p in DATA["different"] if "two days" in p[1])
    embedder = load_embedder(parse_embedding_model("default"))
    items = [("a", weeks), ("b", weeks), ("c", days)]
    passages = [PoolPassage(id=i, tenant=t, text=x) for i, (t, x) in enumerate(items)]
    vectors = embedder.embed([x for _, x in items])
    assert pool_patterns(passages, np.asarray(vectors, dtype=np.float32), RULE) == []
