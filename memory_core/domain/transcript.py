"""Claude Code transcripts (JSONL) read into conversation entries (pure).

One JSON object a line. Lines of `type` "user" and "assistant" carry `message.content`: a
string, or a list of blocks (`text`, `tool_use` {id, name, input}, `tool_result` {tool_use_id,
content (a string or text blocks), is_error}, `thinking`, `image`). A "summary" line holds a
branch title; after a compaction Claude Code writes a "system" line (subtype
compact_boundary) and a user line marked `isCompactSummary` whose text is the summary of what
came before. `isMeta` user lines are Claude Code's own notes (command caveats), not the
person's words. Anything else ("queue-operation", "file-history-snapshot", attachments,
progress lines) is skipped, and so is a line that is not valid JSON (a line still being
written, or a damaged file): reading never fails on a transcript.

What is kept for memory: the person's and the model's words, each tool call (name and
arguments) and each tool result (shortened: a file listing of megabytes is not memory), and
compaction summaries as context. Thinking blocks are the model's scratch work and are left out,
and so is Claude Code's own text inside messages (reminders, command wrappers, interruption
markers, memstrata's injected context: domain.boilerplate). Each entry keeps its line's
timestamp, so what was said is dated at the turn, not at the recording.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import JsonValue

from memory_core.domain.boilerplate import said_text
from memory_core.domain.hook_session import TranscriptCursor

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "TranscriptEntry",
    "TranscriptRead",
    "read_transcript",
]

TOOL_RESULT_MAX_CHARS = 2000
_TEXT_MAX_CHARS = 20_000

# "boundary": a line of Claude Code's own that ends a turn (a hook's feedback, a command
# caveat: `isMeta` user lines); it holds no text and is not recorded.
Kind = Literal["user", "assistant", "tool_call", "tool_result", "compaction_summary", "boundary"]


@dataclass(frozen=True)
class TranscriptEntry:
    """One thing said or done, ready to become a conversation entry."""

    kind: Kind
    text: str = ""
    tool_name: str | None = None
    arguments: dict[str, JsonValue] | None = None
    is_error: bool = False
    after: TranscriptCursor | None = None  # the cursor once this entry's line is recorded
    at: datetime | None = None  # the line's timestamp, when it had a valid one


@dataclass(frozen=True)
class TranscriptRead:
    """The entries after a cursor, the cursor to resume from, and what was skipped."""

    entries: list[TranscriptEntry]
    cursor: TranscriptCursor
    malformed_lines: int = 0
    titles: list[str] = field(default_factory=list)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" [... {len(text) - limit} more characters]"


def _block_text(content: Any) -> str:
    """Text of a tool result's content: a string, or a list of text (and other) blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
        return "\n".join(parts)
    return ""


def _entries(line: dict[str, Any], tools: dict[str, str]) -> list[TranscriptEntry]:
    kind = line.get("type")
    message = line.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return []
    if line.get("isSidechain"):
        return []
    if line.get("isMeta"):
        # Claude Code's own note (a Stop hook's feedback, a command caveat): not the person's
        # words, but what the model says next answers it, not the prompt before.
        return [TranscriptEntry("boundary")] if kind == "user" else []
    content = message.get("content")
    if kind == "user" and line.get("isCompactSummary"):
        text = _block_text(content)
        return [TranscriptEntry("compaction_summary", text.strip())] if text.strip() else []
    if isinstance(content, str):
        text = said_text(content)
        return [TranscriptEntry(kind, _shorten(text, _TEXT_MAX_CHARS))] if text else []
    if not isinstance(content, list):
        return []
    out = [_block_entry(kind, b, tools) for b in content if isinstance(b, dict)]
    return [e for e in out if e is not None]


def _block_entry(kind: str, block: dict[str, Any], tools: dict[str, str]) -> TranscriptEntry | None:
    btype = block.get("type")
    if btype == "text" and (text := said_text(str(block.get("text", "")))):
        role: Kind = "user" if kind == "user" else "assistant"
        return TranscriptEntry(role, _shorten(text, _TEXT_MAX_CHARS))
    if btype == "tool_use" and isinstance(block.get("name"), str) and block["name"]:
        args = block.get("input")
        tools[str(block.get("id", ""))] = block["name"]
        return TranscriptEntry(
            "tool_call", tool_name=block["name"], arguments=args if isinstance(args, dict) else {}
        )
    if btype == "tool_result":
        text = _block_text(block.get("content")).strip() or "(no output)"
        return TranscriptEntry(
            "tool_result",
            _shorten(text, TOOL_RESULT_MAX_CHARS),
            tool_name=tools.get(str(block.get("tool_use_id", ""))),
            is_error=bool(block.get("is_error")),
        )
    return None


def _timestamp(value: Any) -> datetime | None:
    """A line's ISO 8601 `timestamp` in UTC (Claude Code writes "...Z"), or None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _start(lines: list[str], cursor: TranscriptCursor) -> int:
    """Where reading resumes: after the cursor's uuid, else after its line count."""
    if cursor.uuid is not None:
        # Most often the uuid sits exactly at the count; search back from there, then anywhere.
        order = list(range(min(cursor.lines, len(lines)) - 1, -1, -1))
        order += list(range(min(cursor.lines, len(lines)), len(lines)))
        for i in order:
            if cursor.uuid in lines[i]:
                try:
                    if json.loads(lines[i]).get("uuid") == cursor.uuid:
                        return i + 1
                except (ValueError, AttributeError):
                    continue
    return min(cursor.lines, len(lines))


def _known_tools(lines: list[str]) -> dict[str, str]:
    """Tool names of calls made before the cursor, so their results still name the tool."""
    tools: dict[str, str] = {}
    for raw in lines:
        if '"tool_use"' in raw:
            try:
                _entries(json.loads(raw), tools)
            except (ValueError, AttributeError, TypeError):
                continue
    return tools


def read_transcript(
    lines: Iterable[str], cursor: TranscriptCursor | None = None, *, first_line: int = 0
) -> TranscriptRead:
    """The entries of the transcript `lines` after `cursor` (all of them without one).

    `lines` are the file's lines from line number `first_line` on (a read that resumed near
    the cursor); cursors in and out count from the file's start. A last line without its
    newline may still be being written; it is left for the next read (the cursor stops before
    it) unless it parses as a whole JSON object.
    """
    cursor = cursor or TranscriptCursor()
    all_lines = list(lines)
    start = _start(all_lines, TranscriptCursor(max(0, cursor.lines - first_line), cursor.uuid))
    tools = _known_tools(all_lines[:start])
    entries: list[TranscriptEntry] = []
    titles: list[str] = []
    malformed = 0
    read_until, last_uuid = start, None
    for index in range(start, len(all_lines)):
        raw = all_lines[index]
        if not raw.strip():
            read_until = index + 1
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            if index == len(all_lines) - 1 and not raw.endswith("\n"):
                break  # being written: read it next time
            malformed += 1
            read_until, last_uuid = index + 1, None
            continue
        read_until = index + 1
        if not isinstance(line, dict):
            malformed += 1
            last_uuid = None
            continue
        # The uuid of the last line read, or None (then the line count is the place).
        last_uuid = line["uuid"] if isinstance(line.get("uuid"), str) else None
        if line.get("type") == "summary" and isinstance(line.get("summary"), str):
            titles.append(line["summary"].strip())
            continue
        after = TranscriptCursor(lines=first_line + read_until, uuid=last_uuid)
        at = _timestamp(line.get("timestamp"))
        entries.extend(replace(e, after=after, at=at) for e in _entries(line, tools))
    if read_until == start:
        last_uuid = cursor.uuid  # nothing new: the place stays where it was
    return TranscriptRead(
        entries=entries,
        cursor=TranscriptCursor(lines=first_line + read_until, uuid=last_uuid),
        malformed_lines=malformed,
        titles=titles,
    )
