"""Text comparisons used when no embedding model is available (pure)."""

from __future__ import annotations

import hashlib
import re

from memory_core.domain.fts_query import STOPWORDS

__all__ = ["keyword_overlap", "normalise", "normalised_hash"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower case, words only, single spaces: "Use  metric units!" -> "use metric units"."""
    return " ".join(_WORD.findall(text.lower()))


def normalised_hash(text: str) -> str:
    """Identity of a text up to case, spacing and punctuation."""
    return hashlib.sha256(normalise(text).encode()).hexdigest()


def _terms(text: str) -> set[str]:
    words = set(_WORD.findall(text.lower()))
    content = words - STOPWORDS
    return content or words


def keyword_overlap(query: str, text: str) -> float:
    """The share of the query's content words that `text` contains, in [0, 1].

    Function words are left out of the query unless it has nothing else, so "how do I
    deploy" matches on "deploy" and not on "how".
    """
    wanted = _terms(query)
    if not wanted:
        return 0.0
    return len(wanted & set(_WORD.findall(text.lower()))) / len(wanted)
