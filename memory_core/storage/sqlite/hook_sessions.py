"""SqliteHookSessionStore: the HookSessionStore port on the hook_sessions table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.hook_session import HookSession
from memory_core.storage.hook_rows import HookSessionWrites, capture_place, fresh
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
_T = TypeVar("_T", int, str)


class SqliteHookSessionStore(HookSessionWrites):
    """Each change is one IMMEDIATE transaction: concurrent hooks of a session take turns."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def get(self, project: str, session_id: str) -> HookSession | None:
        """The session's state, or None."""
        async with self._session.read("reading a hook session"):
            rows = await self._session.fetch(_SELECT, (project, session_id))
        return _ROWS.hook_session(rows[0]) if rows else None

    async def get_place(self, project: str, session_id: str) -> CapturePlace:
        """Where the session's transcript capture stands (the start, before any)."""
        async with self._session.read("reading a transcript capture's place"):
            rows = await self._session.fetch(_SELECT, (project, session_id))
        return capture_place(rows[0]) if rows else CapturePlace()

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

    async def _append_unique(
        self,
        operation: str,
        project: str,
        session_id: str,
        column: str,
        values: Sequence[_T],
        now: datetime,
    ) -> list[_T]:
        """Append `values` not yet in the JSON list `column`; the appended ones are returned.

        Read and written in one IMMEDIATE transaction: two hooks of a session adding the
        same value at once hand it out once.
        """
        stamp = encode_time(now)
        async with self._session.write(operation):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            rows = await self._session.fetch(
                f"SELECT {column} FROM hook_sessions WHERE project = ? AND session_id = ?",
                (project, session_id),
            )
            known: list[_T] = json.loads(rows[0][0])
            new: list[_T] = fresh(known, values)
            if new:
                await self._session.fetch(
                    f"UPDATE hook_sessions SET {column} = ?, updated_at = ?"
                    " WHERE project = ? AND session_id = ?",
                    (json.dumps([*known, *new]), stamp, project, session_id),
                )
        return new

    async def _set(
        self, operation: str, project: str, session_id: str, now: datetime, **columns: Any
    ) -> None:
        """Set columns of the session's row (created if need be) in one transaction."""
        stamp = encode_time(now)
        names = ", ".join(f"{name} = ?" for name in columns)
        async with self._session.write(operation):
            await self._session.fetch(_ENSURE, (project, session_id, stamp, stamp))
            await self._session.fetch(
                f"UPDATE hook_sessions SET {names}, updated_at = ?"
                " WHERE project = ? AND session_id = ?",
                (*columns.values(), stamp, project, session_id),
            )
