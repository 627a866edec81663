"""Split a document into overlapping chunks along paragraph boundaries (pure)."""

from __future__ import annotations

import bisect
import re

from memory_core.domain.knowledge import ChunkDraft

__all__ = ["chunk_text"]

# A blank line (possibly holding spaces) separates paragraphs; the match ends where the next
# paragraph starts.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# The end of a sentence: terminal punctuation, closing quotes or brackets, then white space.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")
_WORD_START = re.compile(r"(?<!\S)\S")


def _last_in(points: list[int], low: int, high: int) -> int | None:
    """The largest point p with low < p <= high."""
    i = bisect.bisect_right(points, high) - 1
    return points[i] if i >= 0 and points[i] > low else None


def _first_in(points: list[int], low: int, high: int) -> int | None:
    """The smallest point p with low <= p < high."""
    i = bisect.bisect_left(points, low)
    return points[i] if i < len(points) and points[i] < high else None


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def chunk_text(text: str, *, size: int, overlap: int) -> list[ChunkDraft]:
    """Cut `text` into chunks of at most `size` characters that overlap by at most `overlap`.

    A chunk ends, by preference, at a paragraph break, else at a sentence end, else between
    words, and only as a last resort in the middle of a word; a break that would leave the
    chunk less than half full is passed over for a later, finer one. The next chunk starts up
    to `overlap` characters before the previous one ended, at the start of a paragraph if one
    lies in that window, else at the start of a word, so no chunk opens mid-word.

    Every chunk is `text[start:end]` with no outer white space, and together the chunks cover
    every non-space character of `text`.

    Args:
        text: The document.
        size: Longest chunk, in characters (>= 1).
        overlap: Characters a chunk may repeat from its predecessor (0 <= overlap < size).

    Returns:
        The chunks in document order, numbered from 0; empty for blank text.
    """
    if size < 1 or not 0 <= overlap < size:
        raise ValueError("need size >= 1 and 0 <= overlap < size")
    n = len(text)
    paragraphs = [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    sentences = [m.end() for m in _SENTENCE_END.finditer(text)]
    words = [m.start() for m in _WORD_START.finditer(text)]
    chunks: list[ChunkDraft] = []
    start = _skip_space(text, 0)
    while start < n:
        limit = start + size
        end = n if limit >= n else _cut(start, limit, size, (paragraphs, sentences, words))
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        chunks.append(
            ChunkDraft(position=len(chunks), start=start, end=stop, text=text[start:stop])
        )
        if end >= n:
            break
        start = _next_start(text, start, stop, overlap, paragraphs, words)
    return chunks


def _cut(start: int, limit: int, size: int, kinds: tuple[list[int], ...]) -> int:
    """Where a chunk starting at `start` ends, at most at `limit`."""
    for low in (start + size // 2, start):
        for points in kinds:
            found = _last_in(points, low, limit)
            if found is not None:
                return found
    return limit  # one unbroken run longer than a chunk: cut it


def _next_start(
    text: str, start: int, stop: int, overlap: int, paragraphs: list[int], words: list[int]
) -> int:
    """Where the chunk after [start, stop) begins."""
    if overlap > 0:
        low = max(stop - overlap, start + 1)
        for points in (paragraphs, words):
            found = _first_in(points, low, stop)
            if found is not None:
                return found
    return _skip_space(text, stop)
