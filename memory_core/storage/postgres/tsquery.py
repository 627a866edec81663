"""PostgreSQL tsquery text from search words, or from the domain's FTS5 expressions."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["any_word_tsquery", "to_tsquery_text"]

_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_OPERATORS = frozenset({"OR", "AND", "NOT", "NEAR"})


def to_tsquery_text(fts: str, *, weight: str = "") -> str:
    """Tsquery text equivalent to an FTS5 expression of quoted phrases joined by OR.

    That is the only form the domain builds (domain.fts_query.to_fts5_query): each phrase
    becomes words joined by `<->`, phrases are ORed. Unquoted words are ORed too. Every word
    is a run of letters and digits, so quoting it as a tsquery lexeme can never be a syntax
    error.

    Args:
        fts: The FTS5 MATCH expression.
        weight: Restrict matches to one tsvector weight ("A" = the key column), or "" for all.

    Returns:
        The tsquery text, or "" when the expression holds no word.
    """
    phrases = [m.group(1).replace('""', '"') for m in _PHRASE.finditer(fts)]
    if not phrases:
        phrases = [w for w in _WORD.findall(fts) if w not in _OPERATORS]
    suffix = f":{weight}" if weight else ""
    terms = []
    for phrase in phrases:
        words = _WORD.findall(phrase.lower())
        if words:
            terms.append(" <-> ".join(f"'{w}'{suffix}" for w in words))
    return " | ".join(f"({t})" if " " in t else t for t in terms)


def any_word_tsquery(words: Sequence[str], prefix_min_chars: int = 0) -> str:
    """Tsquery text for rows holding any of `words` (domain.models.TextQuery).

    A word is letters and digits only (TextQuery checks it), so quoting it as a lexeme can
    never be a syntax error. A word of at least `prefix_min_chars` characters (0: none) also
    matches as a prefix (`'vuln':*` finds "vulnerabilities"); a row holding the word itself
    matches both forms, so ts_rank_cd ranks it above a prefix-only match.
    """
    terms = []
    for word in words:
        if prefix_min_chars and len(word) >= prefix_min_chars:
            terms.append(f"'{word}' | '{word}':*")
        else:
            terms.append(f"'{word}'")
    return " | ".join(terms)
