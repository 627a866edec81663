"""An absolute match strength for a search hit: strong, partial or weak.

`relevance` is relative (the best candidate of every search has 1), so it cannot say that
nothing in the store is about the query. The match strength is absolute: it comes from the
cosine similarity of the query and the memory, and from the share of the query's words the
memory holds, against thresholds measured on LoCoMo dev (docs/benchmarks.md, "Match
strength"), the same for every query and store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

__all__ = ["Match", "MatchThresholds", "match_strength", "word_share"]

_WORD = re.compile(r"[^\W_]+")


class Match(StrEnum):
    """How well a hit matches its query, weakest first in `order`."""

    WEAK = "weak"
    PARTIAL = "partial"
    STRONG = "strong"

    @property
    def order(self) -> int:
        """0 weak, 1 partial, 2 strong: `min_match` keeps hits at or above a level."""
        return _ORDER[self]


_ORDER = {Match.WEAK: 0, Match.PARTIAL: 1, Match.STRONG: 2}


class MatchThresholds:
    """Where the bands start (see RankingPolicy's match_* settings)."""

    __slots__ = ("partial_cosine", "partial_words", "strong_cosine", "strong_words")

    def __init__(
        self,
        *,
        strong_cosine: float,
        partial_cosine: float,
        strong_words: float,
        partial_words: float,
    ) -> None:
        self.strong_cosine = strong_cosine
        self.partial_cosine = partial_cosine
        self.strong_words = strong_words
        self.partial_words = partial_words


def _same_word(query_word: str, word: str) -> bool:
    """A query word and a memory word are one word: equal, a prefix, or one stem.

    The keyword index stems (porter) but there is no stemmer here; words of 4+ letters that
    share all but the last letter of the shorter one (at least 3) stand in for one stem:
    "hiking" / "hike", "supported" / "support", not "group" / "grown". A query word of 3+
    letters also matches the words it begins, as the keyword search does.
    """
    if word == query_word or (len(query_word) >= 3 and word.startswith(query_word)):
        return True
    if len(query_word) < 4 or len(word) < 4:
        return False
    shared = next(
        (i for i, (a, b) in enumerate(zip(query_word, word, strict=False)) if a != b),
        min(len(query_word), len(word)),
    )
    return shared >= max(3, min(len(query_word), len(word)) - 1)


def word_share(query_words: Iterable[str], text: str) -> float:
    """The share of the (lowercased, function-word-free) query words that `text` holds."""
    wanted = list(dict.fromkeys(query_words))
    if not wanted:
        return 0.0
    words = set(_WORD.findall(text.casefold()))
    # Every non-exact match shares the first 3 letters, so only those words are compared.
    by_start: dict[str, list[str]] = {}
    for w in words:
        by_start.setdefault(w[:3], []).append(w)
    found = sum(
        1
        for q in wanted
        if q in words or any(_same_word(q, w) for w in by_start.get(q[:3], ()) if len(q) >= 3)
    )
    return found / len(wanted)


def match_strength(cosine: float | None, words: float, thresholds: MatchThresholds) -> Match:
    """The band of a hit from its cosine similarity (None: not a vector hit) and word share."""
    c = -1.0 if cosine is None else cosine
    if c >= thresholds.strong_cosine or words >= thresholds.strong_words:
        return Match.STRONG
    if c >= thresholds.partial_cosine or words >= thresholds.partial_words:
        return Match.PARTIAL
    return Match.WEAK
