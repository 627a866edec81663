"""PostgresHookSessionStore: the HookSessionStore port on PostgreSQL (same semantics as SQLite)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memory_core.domain.hook_session import HookSession, TranscriptCursor
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.records import RowReader

_ROWS = RowReader(aware)

__all__ = ["PostgresHookSessionStore"]

_ENSURE = (
    "INSERT INTO hook_sessions (project, session_id, created_at, updated_at)"
    " VALUES ($1, $2, $3, $3) ON CONFLICT (project, session_id) DO NOTHING"
)
# FOR UPDATE: two hooks of one session (and replicas) change the row one after the other.
_LOCKED = "SELECT * FROM hook_sessions WHERE project = $1 AND session_id = $2 FOR UPDATE"


class PostgresHookSessionStore:
    """Each change locks the session's row for its transaction."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def get(self, project: str, session_id: str) -> HookSession | None:
        """The session's state, or None."""
        async with self._session.read("reading a hook session") as conn:
            row = await conn.fetchrow(
                "SELECT * FROM hook_sessions WHERE project = $1 AND session_id = $2",
                project,
                session_id,
            )
        return _ROWS.hook_session(row) if row is not None else None

    async def latest_summary(self, project: str, exclude_session: str | None) -> int | None:
        """The summary of the most recently recorded other session."""
        async with self._session.read("finding the last session summary") as conn:
            value = await conn.fetchval(
                "SELECT summary_id FROM hook_sessions WHERE project = $1 AND session_id != $2"
                " AND summary_id IS NOT NULL ORDER BY updated_at DESC LIMIT 1",
                project,
                exclude_session or "",
            )
        return int(value) if value is not None else None

    async def save_start(
        self, project: str, session_id: str, text: str, tokens: int, now: datetime
    ) -> HookSession:
        """Keep the first start context of the session."""
        stamp = aware(now)
        async with self._session.write("saving a session-start context") as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            await conn.execute(
                "UPDATE hook_sessions SET start_context = $1, start_tokens = $2, updated_at = $3"
                " WHERE project = $4 AND session_id = $5 AND start_context IS NULL",
                text,
                tokens,
                stamp,
                project,
                session_id,
            )
            row = await conn.fetchrow(_LOCKED, project, session_id)
        return _ROWS.hook_session(row)

    async def add_injected(
        self, project: str, session_id: str, ids: Sequence[int], now: datetime
    ) -> list[int]:
        """Record memories as injected; the new ones are returned."""
        stamp = aware(now)
        async with self._session.write("recording injected memories") as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            state = _ROWS.hook_session(await conn.fetchrow(_LOCKED, project, session_id))
            new = state.not_injected(ids)
            if new:
                await conn.execute(
                    "UPDATE hook_sessions SET injected = $1, updated_at = $2"
                    " WHERE project = $3 AND session_id = $4",
                    json.dumps([*state.injected, *new]),
                    stamp,
                    project,
                    session_id,
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
        stamp = aware(now)
        async with self._session.write("saving a transcript cursor") as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            await conn.execute(
                "UPDATE hook_sessions SET transcript_lines = $1, transcript_uuid = $2,"
                " summary_id = $3, updated_at = $4 WHERE project = $5 AND session_id = $6",
                cursor.lines,
                cursor.uuid,
                summary_id,
                stamp,
                project,
                session_id,
            )

    async def save_stop_offset(
        self, project: str, session_id: str, offset: int, now: datetime
    ) -> None:
        """Record the Stop hook's place in the transcript."""
        stamp = aware(now)
        async with self._session.write("saving the stop hook's place") as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            await conn.execute(
                "UPDATE hook_sessions SET stop_offset = $1, updated_at = $2"
                " WHERE project = $3 AND session_id = $4",
                offset,
                stamp,
                project,
                session_id,
            )

    async def add_tool_rules(
        self, project: str, session_id: str, marks: Sequence[str], now: datetime
    ) -> list[str]:
        """Record rules as shown at a tool call; the new marks are returned."""
        stamp = aware(now)
        async with self._session.write("recording rules shown at a tool call") as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            shown = _ROWS.hook_session(await conn.fetchrow(_LOCKED, project, session_id)).tool_rules
            new = [m for m in dict.fromkeys(marks) if m not in shown]
            if new:
                await conn.execute(
                    "UPDATE hook_sessions SET tool_rules = $1, updated_at = $2"
                    " WHERE project = $3 AND session_id = $4",
                    json.dumps([*shown, *new]),
                    stamp,
                    project,
                    session_id,
                )
        return new
