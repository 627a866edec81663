"""PostgresChangeMarks: the ChangeMarks port on the PostgreSQL pool."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.ports.change_marks import ProjectMark, SessionKey, SessionMark
from memory_core.storage.postgres.session import PostgresSession

__all__ = ["PostgresChangeMarks"]

_CACHE = "FROM tool_result_cache c WHERE c.project = s.project AND c.session_id = s.session_id"
_SESSION = (
    "SELECT s.created_at::text, s.updated_at::text, s.next_entry - 1, s.next_summary - 1,"
    " s.next_exchange - 1, octet_length(s.qa_summary), s.pending_summary IS NOT NULL,"
    f" (SELECT count(*) {_CACHE}), (SELECT coalesce(sum(remaining), 0) {_CACHE}),"
    f" (SELECT coalesce(max(created_at)::text, '') {_CACHE})"
    " FROM conversation_sessions s WHERE s.project = $1 AND s.session_id = $2"
)
_COUNTS = (
    "SELECT layer, memory_tier, n, bytes FROM memory_counts WHERE project = $1 AND n != 0"
    " ORDER BY layer, memory_tier"
)
_NEWEST = "SELECT coalesce(max(created_at)::text, '') FROM context_snapshots WHERE project = $1"


class PostgresChangeMarks:
    """Marks read on one pooled connection per batch."""

    def __init__(self, pg: PostgresSession) -> None:
        self._pg = pg

    async def gate(self) -> object | None:
        """See ChangeMarks.gate: PostgreSQL has no cheap whole-database change counter."""
        return None

    async def sessions(self, keys: Sequence[SessionKey]) -> dict[SessionKey, SessionMark | None]:
        """See ChangeMarks.sessions."""
        marks: dict[SessionKey, SessionMark | None] = {}
        async with self._pg.read("session_marks") as conn:
            for project, session_id in keys:
                row = await conn.fetchrow(_SESSION, project, session_id)
                marks[(project, session_id)] = SessionMark.of(row) if row is not None else None
        return marks

    async def projects(self, projects: Sequence[str]) -> dict[str, ProjectMark]:
        """See ChangeMarks.projects."""
        marks: dict[str, ProjectMark] = {}
        async with self._pg.read("project_marks") as conn:
            for project in projects:
                counts = await conn.fetch(_COUNTS, project)
                newest = await conn.fetchval(_NEWEST, project)
                marks[project] = ProjectMark.of(counts, newest)
        return marks
