"""server.hooks.transcript_file: regular files only, from the cursor's byte offset, capped,
complete lines with exact byte sizes (issue 34, point 4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.transcript import read_transcript
from server.hooks.payload import HookInputError
from server.hooks.transcript_file import read_after, read_capture, read_head, read_tail
from tests.hook_transcript import first_part, noisy_part, second_part


def _lines(filler: int = 0) -> list[str]:
    """The shared transcript after `filler` lines of Claude Code's own (1 kB each)."""
    padding = [
        json.dumps({"type": "attachment", "n": n, "attachment": {"content": "x" * 1000}}) + "\n"
        for n in range(filler)
    ]
    return padding + first_part() + second_part() + noisy_part()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_bytes("".join(lines).encode("utf-8"))
    return path


def _place_after(path: Path, lines: list[str], count: int) -> CapturePlace:
    """The place a capture leaves after the first `count` lines."""
    read = read_transcript(lines[:count])
    size = len("".join(lines[: read.cursor.lines]).encode("utf-8"))
    return CapturePlace(cursor=read.cursor, offset=size)


@pytest.mark.parametrize("kind", ["fifo", "character device", "directory"])
async def test_what_is_not_a_regular_file_is_refused_without_waiting(
    tmp_path: Path, kind: str
) -> None:
    path = {"character device": Path("/dev/zero"), "directory": tmp_path}.get(kind)
    if path is None:
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)  # no writer: a blocking open would wait for ever
    for read in (
        read_capture(path, CapturePlace()),
        read_after(path, 0, 1000),
        read_head(path, "agent_transcript_path", 1000),
        read_tail(path, "transcript_path", 1000),
    ):
        with pytest.raises(HookInputError, match="is not a regular file"):
            await read


async def test_a_missing_file_is_named_or_empty(tmp_path: Path) -> None:
    with pytest.raises(HookInputError, match="transcript_path names no file"):
        await read_capture(tmp_path / "gone.jsonl", CapturePlace())
    assert await read_tail(tmp_path / "gone.jsonl", "transcript_path", 100) == []


async def test_a_capture_resumes_at_the_cursors_offset(tmp_path: Path) -> None:
    lines = _lines(filler=600)  # more than the look-back before the cursor
    path = _write(tmp_path / "t.jsonl", lines)
    place = _place_after(path, lines, 600 + len(first_part()))
    text = await read_capture(path, place)
    assert text.start > 0 and text.first_line > 0  # resumed: not from the file's start
    assert text.opening[0] == lines[0]  # the start, for the session's first turn
    resumed = read_transcript(text.lines, place.cursor, first_line=text.first_line)
    whole = read_transcript(lines, place.cursor)
    assert resumed.entries == whole.entries and resumed.cursor == whole.cursor
    assert text.offset_after(resumed.cursor.lines) == path.stat().st_size


async def test_a_tool_result_after_the_cursor_still_names_its_call(tmp_path: Path) -> None:
    lines = _lines()
    path = _write(tmp_path / "t.jsonl", lines)
    call = next(i for i, line in enumerate(lines) if '"tool_use"' in line)
    called = [e.tool_name for e in read_transcript(lines[: call + 1]).entries if e.tool_name][-1]
    place = _place_after(path, lines, call + 1)  # the call recorded, its result not yet
    text = await read_capture(path, place)
    read = read_transcript(text.lines, place.cursor, first_line=text.first_line)
    result = next(e for e in read.entries if e.kind == "tool_result")
    assert result.tool_name == called


async def test_a_file_that_shrank_or_changed_is_read_from_its_start(tmp_path: Path) -> None:
    lines = _lines()
    path = _write(tmp_path / "t.jsonl", lines)
    place = _place_after(path, lines, len(lines) - 2)
    _write(path, lines[:3])  # rewritten shorter: the offset is past its end
    text = await read_capture(path, place)
    assert (text.start, text.first_line) == (0, 0) and len(text.lines) == 3
    _write(path, second_part() + first_part() + noisy_part())  # same size, other lines
    text = await read_capture(path, place)
    assert (text.start, text.first_line) == (0, 0)  # the cursor's uuid is not before it


async def test_a_capped_read_ends_at_a_whole_line_and_the_next_goes_on(tmp_path: Path) -> None:
    lines = _lines()
    path = _write(tmp_path / "t.jsonl", lines)
    place, seen = CapturePlace(), []
    for _ in range(len(lines)):
        text = await read_capture(path, place, limit=1500)
        assert all(line.endswith("\n") for line in text.lines)
        read = read_transcript(text.lines, place.cursor, first_line=text.first_line)
        seen += read.entries
        if read.cursor == place.cursor:
            break
        place = CapturePlace(cursor=read.cursor, offset=text.offset_after(read.cursor.lines))
    whole = read_transcript(lines)
    assert [(e.kind, e.text) for e in seen] == [(e.kind, e.text) for e in whole.entries]
    assert place.offset == path.stat().st_size


async def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path: Path) -> None:
    lines = first_part()
    path = _write(tmp_path / "t.jsonl", lines)
    with path.open("a", encoding="utf-8") as out:
        out.write('{"type": "user", "message": {"role": "user", "content": "half')
    text = await read_capture(path, CapturePlace())
    read = read_transcript(text.lines)
    assert text.offset_after(read.cursor.lines) == len("".join(lines).encode("utf-8"))
    new_lines, end = await read_after(path, 0, 10_000_000)  # the Stop hook: whole lines only
    assert len(new_lines) == len(lines) and end == len("".join(lines).encode("utf-8"))


async def test_only_newlines_end_lines(tmp_path: Path) -> None:
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "a\u2028b\rc"}})
    path = _write(tmp_path / "t.jsonl", [line + "\n", "é" * 3 + "\n"])
    text = await read_capture(path, CapturePlace())
    assert len(text.lines) == 2
    assert text.sizes == [len(line.encode()) + 1, 7]


async def test_head_and_tail_read_only_their_part(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [f'{{"n": {n}}}\n' for n in range(1000)])
    head = await read_head(path, "agent_transcript_path", 30)
    assert head == ['{"n": 0}', '{"n": 1}', '{"n": 2}', '{"n']  # a cut last line is harmless
    tail = await read_tail(path, "transcript_path", 30)  # 'n": 997}' is cut: left out
    assert tail == ['{"n": 998}', '{"n": 999}']


async def test_a_cursor_without_its_offset_is_found_by_its_line_count(tmp_path: Path) -> None:
    """A session captured before byte offsets were kept: its cursor has a line count only."""
    lines = _lines(filler=600)
    path = _write(tmp_path / "t.jsonl", lines)
    place = _place_after(path, lines, len(lines) - 5)
    legacy = CapturePlace(cursor=place.cursor)  # offset 0: unknown
    text = await read_capture(path, legacy, limit=50_000)  # the cursor is far past the cap
    assert text.first_line > 0 and text.start > 0
    read = read_transcript(text.lines, legacy.cursor, first_line=text.first_line)
    assert read.entries == read_transcript(lines, legacy.cursor).entries
