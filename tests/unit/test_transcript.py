"""Reading Claude Code transcripts: roles, tool blocks, damage, compaction, cursors."""

from __future__ import annotations

import json

from memory_core.domain.hook_session import TranscriptCursor
from memory_core.domain.transcript import TOOL_RESULT_MAX_CHARS, read_transcript
from tests.hook_transcript import first_part, second_part


def test_messages_tool_calls_and_results_keep_their_roles_and_order() -> None:
    read = read_transcript(first_part())
    # The isMeta line (a /clear command) is Claude Code's own: a turn boundary, no text.
    assert read.entries[0].kind == "boundary" and read.entries[0].text == ""
    entries = read.entries[1:]
    kinds = [(e.kind, e.text, e.tool_name) for e in entries]
    assert kinds[0] == ("user", "Why does checkout fail with the Stripe webhook?", None)
    assert kinds[1] == ("assistant", "Let me read the webhook handler.", None)
    assert kinds[2] == ("tool_call", "", "Read")
    assert entries[2].arguments == {"file_path": "/home/dev/shop/webhooks.py"}
    assert kinds[3][0] == "tool_result" and kinds[3][2] == "Read"  # named from its call
    assert kinds[4] == ("assistant", "The handler does not verify the signature header.", None)
    assert len(entries) == 5  # thinking and the queue line are left out


def test_a_damaged_line_is_counted_and_skipped_not_fatal() -> None:
    read = read_transcript(first_part())
    assert read.malformed_lines == 1
    assert read.cursor.lines == len(first_part()) and read.cursor.uuid == "a2"
    garbage = ["null\n", "[1, 2]\n", "\x00\x01\n", '{"type": "user", "message": "x"}\n']
    assert read_transcript(garbage).entries == []
    assert read_transcript(garbage).malformed_lines == 3


def test_compaction_summary_becomes_context_and_the_title_is_kept() -> None:
    read = read_transcript(second_part())
    compaction = [e for e in read.entries if e.kind == "compaction_summary"]
    assert len(compaction) == 1 and "signature verification" in compaction[0].text
    assert read.titles == ["Stripe webhook signature fix"]
    errors = [e for e in read.entries if e.kind == "tool_result" and e.is_error]
    assert [(e.tool_name, e.text) for e in errors] == [("Bash", "1 failed: test_signature")]


def test_reading_again_from_the_cursor_adds_only_what_is_new() -> None:
    first = read_transcript(first_part())
    assert read_transcript(first_part(), first.cursor).entries == []
    grown = first_part() + second_part()
    more = read_transcript(grown, first.cursor)
    assert [e.kind for e in more.entries][:2] == ["tool_call", "tool_result"]
    assert more.entries[0].tool_name == "Bash"
    assert read_transcript(grown, more.cursor).entries == []
    whole = read_transcript(grown)
    assert len(whole.entries) == len(first.entries) + len(more.entries)


def test_the_cursor_finds_its_uuid_when_earlier_lines_changed() -> None:
    first = read_transcript(first_part())
    # Claude Code rewrote the head of the file (fewer lines before the same uuid).
    shifted = first_part()[2:] + second_part()
    more = read_transcript(shifted, first.cursor)
    assert more.entries[0].kind == "tool_call" and more.entries[0].tool_name == "Bash"


def test_each_entry_carries_the_cursor_after_its_line() -> None:
    read = read_transcript(first_part())
    assert read.entries[0].after == TranscriptCursor(2, "u1")  # the meta line's boundary
    assert read.entries[2].after == read.entries[3].after  # text and tool_use of one line
    assert read.entries[1].after == TranscriptCursor(3, "u2")
    assert read.entries[-1].after == read.cursor


def test_a_last_line_still_being_written_is_left_for_the_next_read() -> None:
    lines = first_part()
    partial = [*lines, '{"type": "user", "uuid": "u9", "message": {"role": "us']
    read = read_transcript(partial)
    assert read.malformed_lines == 1 and read.cursor.lines == len(lines)
    finished = [
        *lines,
        json.dumps({"type": "user", "uuid": "u9", "message": {"role": "user", "content": "ok!"}})
        + "\n",
    ]
    assert [e.text for e in read_transcript(finished, read.cursor).entries] == ["ok!"]


def test_long_tool_results_are_shortened() -> None:
    line = json.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x" * 50_000}],
            },
        }
    )
    (entry,) = read_transcript([line + "\n"]).entries
    assert len(entry.text) < TOOL_RESULT_MAX_CHARS + 60 and "more characters" in entry.text
