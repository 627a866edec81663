"""SqliteHookSessionStore: the HookSessionStore port on the hook_sessions table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memory_core.domain.hook_session import HookSession, TranscriptCursor
from memory_core.storage.records import RowReader
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession

_ROWS = RowReader(decode_time)

__all__ = ["SqliteHookSessionStore"]

_ENSURE = (
    "INSERT INTO hook_sessions (project, session_id, created_at, updated_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (project, session_id) DO NOTHING"
)
_SELECT = "SELECT * FROM hook_sessions WHERE project = ? AND session_id = ?"


class SqliteHookSessionStore:
    """Each change is one IMMEDIATE transaction: concurrent hooks of a session take turns."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def get(self, project: str, session_id: str) -> HookSession | None:
        """The session's state, or None."""
        async with self._session.read("reading a hook session"):
            rows = await self._session.fetch(_SELECT, (project, session_id))
        return _ROWS.hook_session(rows[0]) if rows else None

    async def latest_summary(self, project: str, exclude_session: str | None) -> int | None:
        """The summary of the most recently recorded other session."""
        async with self._session.read("finding the last session summary"):
            rows = await self._session.fetch(
                "SELECT summary_id FROM hook_sessions WHERE project = ? AND session_id != ?"
                " AND summary_id IS NOT NULL ORDER BY updated_at DESC LIMIT 1",
                (project, exclude_session or ""),
            )
        return int(rows[0][0]) if rows else None

    async def save_start(
        self, project: str, session_id: str, text: str, tokens: int, now: datetime
    ) -> HookSession:
        """Keep the first start context of the session."""
        stamp = encode_time(now)
        async with self._session.write("saving a session-start context"):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            await self._session.fetch(
                "UPDATE hook_sessions SET start_context = ?, start_tokens = ?, updated_at = ?"
                " WHERE project = ? AND session_id = ? AND start_context IS NULL",
                (text, tokens, stamp, project, session_id),
            )
            rows = await self._session.fetch(_SELECT, (project, session_id))
        return _ROWS.hook_session(rows[0])

    async def add_injected(
        self, project: str, session_id: str, ids: Sequence[int], now: datetime
    ) -> list[int]:
        """Record memories as injected; the new ones are returned."""
        stamp = encode_time(now)
        async with self._session.write("recording injected memories"):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            rows = await self._session.fetch(_SELECT, (project, session_id))
            state = _ROWS.hook_session(rows[0])
            new = state.not_injected(ids)
            if new:
                await self._session.fetch(
                    "UPDATE hook_sessions SET injected = ?, updated_at = ?"
                    " WHERE project = ? AND session_id = ?",
                    (json.dumps([*state.injected, *new]), stamp, project, session_id),
                )
        return new

    async def save_transcript(
        self,
        project: str,
        session_id: str,
        cursor: TranscriptCursor,
        summary_id: int | None,
        now: datetime,
    ) -> None:
        """Record the transcript cursor and the summary's memory id."""
        stamp = encode_time(now)
        async with self._session.write("saving a transcript cursor"):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            await self._session.fetch(
                "UPDATE hook_sessions SET transcript_lines = ?, transcript_uuid = ?,"
                " summary_id = ?, updated_at = ? WHERE project = ? AND session_id = ?",
                (cursor.lines, cursor.uuid, summary_id, stamp, project, session_id),
            )

    async def save_stop_offset(
        self, project: str, session_id: str, offset: int, now: datetime
    ) -> None:
        """Record the Stop hook's place in the transcript."""
        stamp = encode_time(now)
        async with self._session.write("saving the stop hook's place"):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            await self._session.fetch(
                "UPDATE hook_sessions SET stop_offset = ?, updated_at = ?"
                " WHERE project = ? AND session_id = ?",
                (offset, stamp, project, session_id),
            )

    async def add_tool_rules(
        self, project: str, session_id: str, marks: Sequence[str], now: datetime
    ) -> list[str]:
        """Record rules as shown at a tool call; the new marks are returned."""
        stamp = encode_time(now)
        async with self._session.write("recording rules shown at a tool call"):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            rows = await self._session.fetch(_SELECT, (project, session_id))
            shown = _ROWS.hook_session(rows[0]).tool_rules
            new = [m for m in dict.fromkeys(marks) if m not in shown]
            if new:
                await self._session.fetch(
                    "UPDATE hook_sessions SET tool_rules = ?, updated_at = ?"
                    " WHERE project = ? AND session_id = ?",
                    (json.dumps([*shown, *new]), stamp, project, session_id),
                )
        return new
