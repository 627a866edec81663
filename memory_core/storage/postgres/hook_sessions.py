"""PostgresHookSessionStore: the HookSessionStore port on PostgreSQL (same semantics as SQLite)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.hook_session import HookSession
from memory_core.storage.hook_rows import HookSessionWrites, capture_place, fresh
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.records import RowReader

_ROWS = RowReader(aware)

__all__ = ["PostgresHookSessionStore"]

_ENSURE = (
    "INSERT INTO hook_sessions (project, session_id, created_at, updated_at)"
    " VALUES ($1, $2, $3, $3) ON CONFLICT (project, session_id) DO NOTHING"
)
_SELECT = "SELECT * FROM hook_sessions WHERE project = $1 AND session_id = $2"
# FOR UPDATE: two hooks of one session (and replicas) change the row one after the other.
_LOCKED = _SELECT + " FOR UPDATE"
_T = TypeVar("_T", int, str)


class PostgresHookSessionStore(HookSessionWrites):
    """Each change locks the session's row for its transaction."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def get(self, project: str, session_id: str) -> HookSession | None:
        """The session's state, or None."""
        async with self._session.read("reading a hook session") as conn:
            row = await conn.fetchrow(_SELECT, project, session_id)
        return _ROWS.hook_session(row) if row is not None else None

    async def get_place(self, project: str, session_id: str) -> CapturePlace:
        """Where the session's transcript capture stands (the start, before any)."""
        async with self._session.read("reading a transcript capture's place") as conn:
            row = await conn.fetchrow(_SELECT, project, session_id)
        return capture_place(row) if row is not None else CapturePlace()

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

        The row is locked for the transaction: two hooks of a session adding the same value
        at once hand it out once.
        """
        stamp = aware(now)
        async with self._session.write(operation) as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            row = await conn.fetchrow(_LOCKED, project, session_id)
            known: list[_T] = json.loads(row[column])
            new: list[_T] = fresh(known, values)
            if new:
                await conn.execute(
                    f"UPDATE hook_sessions SET {column} = $1, updated_at = $2"
                    " WHERE project = $3 AND session_id = $4",
                    json.dumps([*known, *new]),
                    stamp,
                    project,
                    session_id,
                )
        return new

    async def _set(
        self, operation: str, project: str, session_id: str, now: datetime, **columns: Any
    ) -> None:
        """Set columns of the session's row (created if need be) in one transaction."""
        stamp = aware(now)
        names = ", ".join(f"{name} = ${n}" for n, name in enumerate(columns, start=4))
        async with self._session.write(operation) as conn:
            await conn.execute(_ENSURE, project, session_id, stamp)
            await conn.execute(
                f"UPDATE hook_sessions SET {names}, updated_at = $3"
                " WHERE project = $1 AND session_id = $2",
                project,
                session_id,
                stamp,
                *columns.values(),
            )
