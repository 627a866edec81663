"""Search words (domain.models.TextQuery) as FTS5 MATCH expressions."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["any_word", "every_word"]


def _word(word: str, prefix_min_chars: int) -> list[str]:
    # A word is letters and digits only (TextQuery checks it), so quoting makes it a literal.
    # A long enough word is also a prefix query ("vuln"* finds "vulnerabilities"); a row that
    # holds the word itself matches both forms, so BM25 ranks it above a prefix-only match.
    exact = f'"{word}"'
    if prefix_min_chars and len(word) >= prefix_min_chars:
        return [exact, f"{exact}*"]
    return [exact]


def any_word(words: Sequence[str], prefix_min_chars: int = 0) -> str:
    """Rows holding any of `words` (an OR query: BM25 ranks rows with more of them higher)."""
    return " OR ".join(form for word in words for form in _word(word, prefix_min_chars))


def every_word(words: Sequence[str], prefix_min_chars: int = 0) -> str | None:
    """Rows holding every one of `words`, or None for a single word (nothing to narrow)."""
    if len(words) < 2:
        return None
    terms = [_word(word, prefix_min_chars) for word in words]
    return " AND ".join(f"({' OR '.join(t)})" if len(t) > 1 else t[0] for t in terms)
