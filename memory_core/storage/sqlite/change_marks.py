"""SqliteChangeMarks: the ChangeMarks port on the shared SQLite connection."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.ports.change_marks import ProjectMark, SessionKey, SessionMark
from memory_core.storage.sqlite.session import SqliteSession

__all__ = ["SqliteChangeMarks"]

# One primary-key probe of the session and one range of its cache rows (primary key prefix).
_SESSION = (
    "SELECT s.created_at, s.updated_at, s.next_entry - 1, s.next_summary - 1,"
    " s.next_exchange - 1, length(CAST(s.qa_summary AS BLOB)), s.pending_summary IS NOT NULL,"
    " (SELECT count(*) FROM tool_result_cache c"
    "   WHERE c.project = s.project AND c.session_id = s.session_id),"
    " (SELECT coalesce(sum(remaining), 0) FROM tool_result_cache c"
    "   WHERE c.project = s.project AND c.session_id = s.session_id),"
    " (SELECT coalesce(max(created_at), '') FROM tool_result_cache c"
    "   WHERE c.project = s.project AND c.session_id = s.session_id)"
    " FROM conversation_sessions s WHERE s.project = ? AND s.session_id = ?"
)
# The kept counters (migration 0006) and one probe of idx_snapshots_project_created.
_COUNTS = (
    "SELECT layer, memory_tier, n, bytes FROM memory_counts WHERE project = ? AND n != 0"
    " ORDER BY layer, memory_tier"
)
_NEWEST = "SELECT coalesce(max(created_at), '') FROM context_snapshots WHERE project = ?"


class SqliteChangeMarks:
    """Marks read on the connection the stores share (under its lock, outside transactions)."""

    def __init__(self, session: SqliteSession) -> None:
        self._s = session

    async def gate(self) -> object | None:
        """See ChangeMarks.gate."""
        async with self._s.read("change_gate"):
            version = await self._s.fetch("PRAGMA data_version")
            own = await self._s.fetch("SELECT total_changes()")
        return (version[0][0], own[0][0])

    async def sessions(self, keys: Sequence[SessionKey]) -> dict[SessionKey, SessionMark | None]:
        """See ChangeMarks.sessions."""
        marks: dict[SessionKey, SessionMark | None] = {}
        async with self._s.read("session_marks"):
            for key in keys:
                rows = await self._s.fetch(_SESSION, key)
                marks[key] = SessionMark.of(rows[0]) if rows else None
        return marks

    async def projects(self, projects: Sequence[str]) -> dict[str, ProjectMark]:
        """See ChangeMarks.projects."""
        marks: dict[str, ProjectMark] = {}
        async with self._s.read("project_marks"):
            for project in projects:
                counts = await self._s.fetch(_COUNTS, (project,))
                newest = await self._s.fetch(_NEWEST, (project,))
                marks[project] = ProjectMark.of(counts, newest[0][0])
        return marks
