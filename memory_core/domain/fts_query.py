"""Turn free user text into an FTS5 MATCH expression that can never be a syntax error."""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "STOPWORDS", "WORD", "search_words", "to_fts5_query"]

MAX_TERMS = 32
# Word runs as unicode61 sees them; everything else (quotes, operators, emoji) separates words.
WORD = re.compile(r"[^\W_]+", re.UNICODE)
# English function words and question words. In an OR query each one matches most rows, so it
# adds noise to BM25 without adding evidence ("When did Caroline go to the group?").
_STOPWORD_TEXT = (
    "a about an and are as at be been but by can could did do does for from had has have he "
    "her hers him his how i if in into is it its me my of on or our she so than that the "
    "their them then there these they this those to was we were what when where which who "
    "whom whose why will with would you your"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def search_words(
    text: str, *, max_terms: int = MAX_TERMS, drop_stopwords: bool = False
) -> tuple[str, ...]:
    """The distinct lowercased words of `text` a keyword search looks for.

    Every word is a run of letters and digits (WORD), so a backend can quote it as a literal
    of its own query language without any escaping.

    Args:
        text: Anything a client sent.
        max_terms: Distinct words kept, in order of first appearance.
        drop_stopwords: Leave out STOPWORDS, unless nothing else would be left.

    Returns:
        The words, empty when the text holds none.
    """
    words = list(dict.fromkeys(match.group(0) for match in WORD.finditer(text.lower())))
    if drop_stopwords:
        # Filter before capping, so function words never crowd out the words that matter.
        words = [word for word in words if word not in STOPWORDS] or words
    return tuple(words[:max_terms])


def to_fts5_query(
    text: str, *, max_terms: int = MAX_TERMS, drop_stopwords: bool = False
) -> str | None:
    """Quote every word of `text` and OR them together.

    OR (not FTS5's implicit AND) because a natural-language question rarely repeats every word
    of the memory it is after; BM25 still ranks rows that match more words higher.

    Args:
        text: Anything a client sent.
        max_terms: Distinct words kept, in order of first appearance.
        drop_stopwords: Leave out STOPWORDS, unless nothing else would be left.

    Returns:
        The MATCH expression, or None when the text holds no searchable word.
    """
    words = search_words(text, max_terms=max_terms, drop_stopwords=drop_stopwords)
    if not words:
        return None
    # A word run holds no double quote, so wrapping it in quotes makes a literal FTS5 string.
    return " OR ".join(f'"{word}"' for word in words)
