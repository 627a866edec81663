"""Bounded reads of the transcript files Claude Code names to the hooks.

A hook is given a path (`transcript_path`, `agent_transcript_path`) and must answer within its
budget whatever is at that path. Every read here:

- opens without blocking (O_NONBLOCK: opening a FIFO with no writer returns at once) and
  reads only a regular file (fstat of the open descriptor, so a swapped path cannot slip a
  FIFO or a device such as /dev/zero in after the check);
- reads at most a given number of bytes, so memory stays bounded whatever the file's size;
- returns complete lines only (a line cut by the bound, or still being written, is left for
  the next read), with each line's size in bytes, so callers keep byte offsets exact;
- runs in a worker thread when awaited (`asyncio.to_thread`), so the event loop keeps its
  budget timer and its database connection going while the disk is slow.

The three readers: a capture (PreCompact, SessionEnd) resumes just after its cursor's byte
offset, with a little before it so a tool result still names its call; the Stop hook reads
what follows its own offset; the sub-agent hooks read a file's head or tail.
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import replace
from pathlib import Path

from memory_core.domain.capture_place import CapturePlace, TranscriptText
from server.hooks.payload import HookInputError

__all__ = [
    "CAPTURE_READ_MAX",
    "read_after",
    "read_capture",
    "read_head",
    "read_tail",
]

# One capture records at most this much of new transcript; the next capture continues from
# where it stopped (a session of 32 MB of new lines between two captures is rare: the
# recorded transcript in tests/data is 400 kB for three prompts).
CAPTURE_READ_MAX = 32_000_000
# Read before the cursor's offset: the tool calls whose results follow the cursor.
_LOOKBACK = 256_000
# Read from the file's start when resuming: where the session begins (its first turn's time).
_OPENING = 128_000
_CHUNK = 1 << 20


def _open(path: Path, field: str) -> tuple[int, int] | None:
    """A read-only descriptor on the regular file at `path` and its size; None: no file.

    `field` names the path in errors (the payload's field).

    Raises:
        HookInputError: Not a regular file, or unreadable.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HookInputError(f"{field} cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise HookInputError(f"{field} is not a regular file")
    return fd, info.st_size


def _open_existing(path: Path, field: str) -> tuple[int, int]:
    opened = _open(path, field)
    if opened is None:
        raise HookInputError(f"{field} names no file")
    return opened


def _read_span(fd: int, start: int, limit: int) -> bytes:
    """At most `limit` bytes from byte `start` (fewer at the end of the file)."""
    parts: list[bytes] = []
    got = 0
    while got < limit:
        try:
            part = os.pread(fd, min(_CHUNK, limit - got), start + got)
        except OSError as exc:
            raise HookInputError(f"a transcript cannot be read ({exc.strerror})") from None
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _split(data: bytes, *, keep_last: bool) -> tuple[list[str], list[int]]:
    """Lines (decoded, newline kept) and their byte sizes.

    The last unfinished line is kept only when `keep_last` (the end of the file: it may be a
    whole object written without its newline). Split at newlines only, as JSONL is: a U+2028
    or a lone CR inside a JSON string is text.
    """
    raw = [line + b"\n" for line in data.split(b"\n")]
    raw[-1] = raw[-1][:-1]  # what follows the last newline: unfinished, or nothing
    if not raw[-1] or not keep_last:
        raw.pop()
    return [line.decode("utf-8", errors="replace") for line in raw], [len(r) for r in raw]


def _text_from(
    fd: int, size: int, start: int, limit: int, *, unfinished: bool = True
) -> TranscriptText:
    """The complete lines from byte `start` (a line boundary), at most `limit` bytes.

    With `unfinished`, also the file's unfinished last line when the read reaches the end.
    """
    data = _read_span(fd, start, limit)
    lines, sizes = _split(data, keep_last=unfinished and start + len(data) >= size)
    return TranscriptText(lines, sizes, start=start)


def _resumed(fd: int, size: int, place: CapturePlace, limit: int) -> TranscriptText | None:
    """The lines after the place's byte offset, with a little before it.

    None when the offset no longer follows the cursor's line (the file shrank or was rewritten).
    """
    offset = place.offset
    if offset <= 0 or offset > size or place.cursor.lines <= 0:
        return None
    begin = max(0, offset - _LOOKBACK)
    before = _read_span(fd, begin, offset - begin)
    if not before.endswith(b"\n"):
        return None  # the offset is no longer just after a line
    lines, sizes = _split(before, keep_last=False)
    if begin > 0 and lines:
        begin += sizes[0]  # the first line may be cut by the look-back
        lines, sizes = lines[1:], sizes[1:]
    if place.cursor.uuid is not None and (not lines or place.cursor.uuid not in lines[-1]):
        return None  # another line sits before the offset now
    after = _text_from(fd, size, offset, limit)
    opening = _split(_read_span(fd, 0, _OPENING), keep_last=False)[0] if begin > 0 else []
    return TranscriptText(
        lines + after.lines,
        sizes + after.sizes,
        start=begin,
        first_line=max(0, place.cursor.lines - len(lines)),
        opening=opening,
    )


def _line_end(fd: int, size: int, lines: int) -> int | None:
    """The byte offset just after the file's first `lines` lines, or None (fewer lines).

    Counted a chunk at a time, so memory stays bounded however far the line is.
    """
    position = counted = 0
    while position < size:
        chunk = _read_span(fd, position, _CHUNK)
        if not chunk:
            break
        found = chunk.count(b"\n")
        if counted + found >= lines:
            at = -1
            for _ in range(lines - counted):
                at = chunk.index(b"\n", at + 1)
            return position + at + 1
        counted += found
        position += len(chunk)
    return None


def _capture(path: Path, place: CapturePlace, limit: int) -> TranscriptText:
    fd, size = _open_existing(path, "transcript_path")
    try:
        resumed = _resumed(fd, size, place, limit)
        if resumed is None and place.cursor.lines > 0:
            # The offset is unknown (a session captured before it was kept) or stale: the
            # cursor's line count says where it is, if the line there is still the cursor's.
            end = _line_end(fd, size, place.cursor.lines)
            if end is not None and end != place.offset:
                resumed = _resumed(fd, size, replace(place, offset=end), limit)
        # Otherwise from the start: the cursor is found again by its uuid or its line count.
        return resumed if resumed is not None else _text_from(fd, size, 0, limit)
    finally:
        os.close(fd)


async def read_capture(
    path: Path, place: CapturePlace, limit: int = CAPTURE_READ_MAX
) -> TranscriptText:
    """What a capture reads: the lines after `place` (see the module), off the event loop."""
    return await asyncio.to_thread(_capture, path, place, limit)


def _after(path: Path, offset: int, limit: int) -> tuple[list[str], int]:
    fd, size = _open_existing(path, "transcript_path")
    try:
        start = offset if 0 <= offset <= size else 0  # a file that shrank: from the start
        # Whole lines only: the offset never points into a line still being written.
        text = _text_from(fd, size, start, limit, unfinished=False)
    finally:
        os.close(fd)
    return text.lines, start + sum(text.sizes)


async def read_after(path: Path, offset: int, limit: int) -> tuple[list[str], int]:
    """The complete lines after byte `offset` (from 0 if the file shrank) and the new offset."""
    return await asyncio.to_thread(_after, path, offset, limit)


def _edge(path: Path, field: str, *, tail: bool, limit: int) -> list[str]:
    opened = _open(path, field)
    if opened is None:
        return []  # not written (yet): nothing to read
    fd, size = opened
    try:
        start = max(0, size - limit) if tail else 0
        data = _read_span(fd, start, limit)
    finally:
        os.close(fd)
    lines, _ = _split(data, keep_last=True)
    return [line.rstrip("\r\n") for line in (lines[1:] if tail and start > 0 else lines)]


async def read_head(path: Path, field: str, limit: int) -> list[str]:
    """The lines of the first `limit` bytes of a regular file ([] when there is none)."""
    return await asyncio.to_thread(_edge, path, field, tail=False, limit=limit)


async def read_tail(path: Path, field: str, limit: int) -> list[str]:
    """The whole lines of the last `limit` bytes of a regular file ([] when there is none)."""
    return await asyncio.to_thread(_edge, path, field, tail=True, limit=limit)
