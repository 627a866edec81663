"""Where a transcript capture stands and what a bounded read of the file gave (pure data).

Apart from domain.transcript so that the hook session stores, which every hook loads, need
not load the transcript reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memory_core.domain.hook_session import TranscriptCursor

__all__ = ["CapturePlace", "TranscriptText"]

# Lines of a transcript's start read for the time its session began (the first turns).
_HEAD_LINES = 200


@dataclass(frozen=True)
class CapturePlace:
    """Where a session's transcript capture stands (kept in the hook session state).

    `offset` is the byte offset in the file just after the cursor's line (0: unknown, the next
    capture reads from the start and finds the cursor by its uuid or line count). `entry_mark`
    is the number of the last conversation entry the capture wrote as of the cursor (None:
    unknown): entries after it that the capture wrote belong to the line after the cursor, so
    a capture cut short between an entry and its cursor never writes that entry twice.
    """

    cursor: TranscriptCursor = field(default_factory=TranscriptCursor)
    offset: int = 0
    entry_mark: int | None = None
    summary_id: int | None = None
    title: str | None = None  # the branch title last seen (a "summary" line), for the digest


@dataclass(frozen=True)
class TranscriptText:
    """Lines of a transcript as read: line number `first_line` of the file onwards.

    `sizes` holds each line's length in bytes in the file (a line decoded with replacement
    characters no longer encodes to its length), and `start` the byte offset of the first,
    so the byte offset after any line read is known.
    """

    lines: list[str]
    sizes: list[int]
    start: int = 0
    first_line: int = 0
    # The file's first lines (a bounded read) when `lines` do not start at the beginning.
    opening: list[str] = field(default_factory=list)

    @classmethod
    def whole(cls, lines: Iterable[str]) -> TranscriptText:
        """A whole transcript given as text lines (UTF-8 in the file)."""
        kept = list(lines)
        return cls(kept, [len(line.encode("utf-8", "surrogatepass")) for line in kept])

    def head(self) -> list[str]:
        """The file's first lines, as far as they are known: where the session begins."""
        return self.opening if self.start > 0 else self.lines[:_HEAD_LINES]

    def offset_after(self, line_count: int) -> int:
        """The byte offset just after the file's first `line_count` lines (within these)."""
        return self.start + sum(self.sizes[: max(0, line_count - self.first_line)])
