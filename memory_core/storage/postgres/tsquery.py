"""Translate the domain's FTS5 expressions into PostgreSQL tsquery text."""

from __future__ import annotations

import re

__all__ = ["to_tsquery_text"]

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
