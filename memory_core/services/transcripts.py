"""Recording a Claude Code transcript into conversation memory, and the session's summary.

Each transcript line becomes entries of the conversation session named like the Claude Code
session: user and assistant text as messages, tool calls with their name and arguments, tool
results (with the tool's name), and compaction summaries as context. The cursor in the hook
session state moves after every line, so a transcript read again, or grown since, adds only
what is new, even when the previous run was cut short. Entries go through
ConversationService.add_entry, so they are redacted, counted and compressed like any other.

Then the session's summary is stored as one episodic memory of the project (metadata kind
"session_summary"): when the session is recorded again the new summary replaces the old one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from pydantic import JsonValue

from memory_core.domain.condense import fallback_summary, shorten_bytes
from memory_core.domain.conversation import Entry, EntryType, Role
from memory_core.domain.hook_session import PROMPT_SOURCE, START_SOURCE, TranscriptCursor
from memory_core.domain.models import Layer
from memory_core.domain.transcript import TranscriptEntry, read_transcript
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.ports import Clock
from memory_core.ports.hooks import HookSessionStore
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService
from memory_core.services.session_start import SESSION_SUMMARY_KIND

__all__ = [
    "COMPACTION_SOURCE",
    "PROMPT_SOURCE",
    "START_SOURCE",
    "RecordResult",
    "TranscriptRecorder",
    "session_summary",
]

log = structlog.get_logger(__name__)

# `source` of context entries: a Claude Code compaction summary (what the hooks injected is
# START_SOURCE and PROMPT_SOURCE, domain.hook_session).
COMPACTION_SOURCE = "claude-code:compaction"
_SUMMARY_BYTES = 1600


@dataclass(frozen=True)
class RecordResult:
    """What one recording added."""

    entries_added: int
    entries_skipped: int
    malformed_lines: int
    cursor: TranscriptCursor
    summary_id: int | None


def _entry_kwargs(entry: TranscriptEntry) -> dict[str, object]:
    if entry.kind in ("user", "assistant"):
        role = Role.USER if entry.kind == "user" else Role.ASSISTANT
        return {"type": EntryType.MESSAGE, "role": role, "content": entry.text}
    if entry.kind == "tool_call":
        return {
            "type": EntryType.TOOL_CALL,
            "tool_name": entry.tool_name,
            "arguments": entry.arguments or {},
        }
    if entry.kind == "tool_result":
        return {
            "type": EntryType.TOOL_RESULT,
            "content": entry.text,
            "tool_name": entry.tool_name,
            "is_error": entry.is_error,
        }
    return {"type": EntryType.CONTEXT, "content": entry.text, "source": COMPACTION_SOURCE}


def session_summary(session_id: str, title: str | None, entries: Sequence[Entry]) -> str:
    """One paragraph about a session: its title, the last compaction summary, what happened."""
    parts = [f"Claude Code session {session_id}" + (f": {title}" if title else "")]
    compactions = [
        e for e in entries if e.type is EntryType.CONTEXT and e.source == COMPACTION_SOURCE
    ]
    if compactions:
        parts.append("Summary: " + shorten_bytes(" ".join(compactions[-1].content.split()), 700))
    spoken = [
        e
        for e in entries
        if not (e.type is EntryType.CONTEXT and e.source in (START_SOURCE, PROMPT_SOURCE))
    ]
    parts.append(fallback_summary(spoken, max_bytes=800))
    return shorten_bytes("\n".join(parts), _SUMMARY_BYTES)


class TranscriptRecorder:
    """Records transcripts of one store's sessions (see the module docstring)."""

    def __init__(
        self,
        *,
        conversations: ConversationService,
        memories: MemoryService,
        hook_sessions: HookSessionStore,
        clock: Clock,
    ) -> None:
        self._conversations = conversations
        self._memories = memories
        self._hooks = hook_sessions
        self._clock = clock

    async def record(
        self, project: str, session_id: str, lines: Sequence[str], *, summarize: bool = True
    ) -> RecordResult:
        """Add the transcript's new lines to the session; store its summary when `summarize`."""
        state = await self._hooks.get(project, session_id)
        summary_id = state.summary_id if state else None
        read = read_transcript(lines, state.cursor if state else None)
        await self._conversations.start(project, session_id)
        added = skipped = 0
        for index, entry in enumerate(read.entries):
            try:
                await self._conversations.add_entry(project, session_id, **_entry_kwargs(entry))  # type: ignore[arg-type]
                added += 1
            except InvalidInputError as exc:
                # A block this store cannot hold (e.g. a tool name over 128 characters): skip
                # it, keep the rest of the session.
                log.warning("hooks.entry_skipped", session_id=session_id, field=exc.field)
                skipped += 1
            last_of_line = (
                index + 1 == len(read.entries) or read.entries[index + 1].after != entry.after
            )
            if last_of_line and entry.after is not None:
                await self._hooks.save_transcript(
                    project, session_id, entry.after, summary_id, self._clock.now()
                )
        await self._hooks.save_transcript(
            project, session_id, read.cursor, summary_id, self._clock.now()
        )
        if summarize and (added or summary_id is None):
            summary_id = await self._store_summary(
                project, session_id, read.titles[-1] if read.titles else None, summary_id
            )
            await self._hooks.save_transcript(
                project, session_id, read.cursor, summary_id, self._clock.now()
            )
        return RecordResult(
            entries_added=added,
            entries_skipped=skipped,
            malformed_lines=read.malformed_lines,
            cursor=read.cursor,
            summary_id=summary_id,
        )

    async def _store_summary(
        self, project: str, session_id: str, title: str | None, previous: int | None
    ) -> int | None:
        data = await self._conversations.export(project, session_id)
        if not data.entries:
            return previous
        if title is None and previous is not None:
            old = await self._memories.repo.get(project, previous)
            title_value = old.metadata.get("title") if old is not None else None
            title = title_value if isinstance(title_value, str) else None
        text = session_summary(session_id, title, data.entries)
        metadata: dict[str, JsonValue] = {"kind": SESSION_SUMMARY_KIND, "session_id": session_id}
        if title:
            metadata["title"] = title
        result = await self._memories.append(
            project,
            Layer.EPISODIC,
            text,
            metadata=metadata,
            session_id=session_id,
        )
        new_id = result.memory.id
        if previous is not None and previous != new_id:
            # Already forgotten by someone: nothing left to replace.
            with contextlib.suppress(MemoryNotFoundError):
                await self._memories.forget(project, previous)
        return new_id
