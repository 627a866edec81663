"""Search words (domain.models.TextQuery) as FTS5 MATCH expressions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations

__all__ = ["any_word", "every_word", "exact_word", "prefix_candidates", "two_words"]


def exact_word(word: str) -> str:
    """The MATCH expression of one whole word (stemmed by the index's tokenizer)."""
    # A word is letters and digits only (TextQuery checks it), so quoting makes it a literal.
    return f'"{word}"'


def prefix_candidates(words: Sequence[str], prefix_min_chars: int) -> list[str]:
    """The words long enough to be matched as prefixes too (`prefix_min_chars` 0: none)."""
    if not prefix_min_chars:
        return []
    return [word for word in words if len(word) >= prefix_min_chars]


def _word(word: str, prefix_min_chars: int, whole_only: Collection[str]) -> list[str]:
    # A long enough word is also a prefix query ("vuln"* finds "vulnerabilities"); a row that
    # holds the word itself matches both forms, so BM25 ranks it above a prefix-only match.
    exact = exact_word(word)
    if prefix_min_chars and len(word) >= prefix_min_chars and word not in whole_only:
        return [exact, f"{exact}*"]
    return [exact]


def any_word(
    words: Sequence[str], prefix_min_chars: int = 0, whole_only: Collection[str] = ()
) -> str:
    """Rows holding any of `words` (an OR query: BM25 ranks rows with more of them higher).

    Words in `whole_only` match only as whole words, whatever their length.
    """
    return " OR ".join(form for word in words for form in _word(word, prefix_min_chars, whole_only))


def every_word(
    words: Sequence[str], prefix_min_chars: int = 0, whole_only: Collection[str] = ()
) -> str | None:
    """Rows holding every one of `words`, or None for a single word (nothing to narrow)."""
    if len(words) < 2:
        return None
    terms = [_word(word, prefix_min_chars, whole_only) for word in words]
    return " AND ".join(f"({' OR '.join(t)})" if len(t) > 1 else t[0] for t in terms)


def two_words(
    words: Sequence[str], prefix_min_chars: int = 0, whole_only: Collection[str] = ()
) -> str | None:
    """Rows holding at least two of `words`, or None below three words (`every_word` is that).

    An OR of every pair, `(a AND b) OR (a AND c) OR (b AND c)`. FTS5 scores a word once for
    each matching pair it is in, so a row holding m of the words scores m - 1 times its BM25
    for the plain OR query (`any_word`): rows holding more of the words rank first.
    """
    if len(words) < 3:
        return None
    terms = [_word(word, prefix_min_chars, whole_only) for word in words]
    groups = [f"({' OR '.join(t)})" if len(t) > 1 else t[0] for t in terms]
    return " OR ".join(f"({a} AND {b})" for a, b in combinations(groups, 2))
