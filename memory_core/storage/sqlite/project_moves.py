"""SqliteProjectMoves: the ProjectMoves port on SQLite.

The triggers keep what follows a memory's project (memory_counts, the keyword queue, the
vec0 partition) in step with an UPDATE of `project`; the queue is applied before COMMIT
(indexed_write) so the new name's keyword table holds the moved rows at once. A large
project searched on the coarse path (vector_coarse_projects) lists the new name too.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.ports.project_moves import START_DIRECTORY, ProjectMove, StartDirectories
from memory_core.storage.sqlite.keyword_tables import indexed_write
from memory_core.storage.sqlite.session import SqliteSession

__all__ = ["SqliteProjectMoves"]

_CHILDREN = (
    "conversation_summaries",
    "conversation_entries",
    "conversation_exchanges",
    "tool_result_cache",
)
_CHUNK = 500  # session ids per statement (SQLite allows 32,766 parameters)

# A memory the new name already holds by the identity rules of 0001 (ux_snapshots_key and
# ux_snapshots_content) stays where it is.
_MOVE_MEMORIES = """
UPDATE context_snapshots SET project = :new
WHERE project = :old AND NOT EXISTS (
    SELECT 1 FROM context_snapshots AS n
    WHERE n.project = :new AND n.layer = context_snapshots.layer AND (
        (context_snapshots.key IS NOT NULL AND n.key = context_snapshots.key)
        OR (context_snapshots.key IS NULL AND n.key IS NULL
            AND n.content_hash = context_snapshots.content_hash
            AND (context_snapshots.layer != 'working'
                 OR coalesce(n.session_id, '') = coalesce(context_snapshots.session_id, '')))))
"""


class SqliteProjectMoves:
    """Renames in one IMMEDIATE transaction: concurrent writers wait, then see the new name."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def holds_rows(self, project: str) -> bool:
        """True when the project has a memory, a conversation session or a hook session."""
        async with self._session.read("looking up a project"):
            rows = await self._session.fetch(
                "SELECT EXISTS (SELECT 1 FROM context_snapshots WHERE project = ?1)"
                " OR EXISTS (SELECT 1 FROM conversation_sessions WHERE project = ?1)"
                " OR EXISTS (SELECT 1 FROM hook_sessions WHERE project = ?1)",
                (project,),
            )
        return bool(rows[0][0])

    async def start_directories(self, project: str) -> StartDirectories:
        """Where the project's hook sessions started (see StartDirectories)."""
        async with self._session.snapshot("reading where a project's sessions started"):
            total, unnamed = (
                await self._session.fetch(
                    "SELECT count(*), coalesce(sum(instr(start_context, ?2) = 0), 0)"
                    " FROM hook_sessions WHERE project = ?1 AND start_context IS NOT NULL",
                    (project, START_DIRECTORY),
                )
            )[0]
            named = await self._session.fetch(
                "SELECT DISTINCT substr(rest, 1, instr(rest || char(10), char(10)) - 1) FROM ("
                " SELECT substr(start_context, instr(start_context, ?2) + length(?2)) AS rest"
                " FROM hook_sessions WHERE project = ?1 AND instr(start_context, ?2) > 0)",
                (project, START_DIRECTORY),
            )
        return StartDirectories(frozenset(str(r[0]) for r in named), int(total), int(unnamed))

    async def move(self, old: str, new: str) -> ProjectMove:
        """Move `old`'s memories, conversations and hook sessions to `new`, in one transaction."""
        async with indexed_write(self._session, "moving a project") as db:
            async with db.execute(_MOVE_MEMORIES, {"old": old, "new": new}) as cur:
                moved = cur.rowcount
            kept = await self._count("context_snapshots", old)
            sessions = [
                str(r[0])
                for r in await self._session.fetch(
                    "SELECT session_id FROM conversation_sessions AS s WHERE project = ?1"
                    " AND NOT EXISTS (SELECT 1 FROM conversation_sessions AS n"
                    " WHERE n.project = ?2 AND n.session_id = s.session_id)",
                    (old, new),
                )
            ]
            columns = await self._columns("conversation_sessions")
            for start in range(0, len(sessions), _CHUNK):
                await self._move_sessions(old, new, columns, sessions[start : start + _CHUNK])
            async with db.execute(
                "UPDATE hook_sessions SET project = ?2 WHERE project = ?1 AND session_id"
                " NOT IN (SELECT session_id FROM hook_sessions WHERE project = ?2)",
                (old, new),
            ) as cur:
                hooks = cur.rowcount
            await self._list_coarse(old, new)
            return ProjectMove(
                memories=moved,
                memories_kept=kept,
                sessions=len(sessions),
                sessions_kept=await self._count("conversation_sessions", old),
                hook_sessions=hooks,
                hook_sessions_kept=await self._count("hook_sessions", old),
            )

    async def _move_sessions(
        self, old: str, new: str, columns: Sequence[str], ids: Sequence[str]
    ) -> None:
        """Copy the sessions under `new`, move their rows, drop the old sessions.

        The child tables' foreign keys name (project, session_id) without ON UPDATE CASCADE,
        so the parent cannot be renamed in place while children point at it.
        """
        marks = ", ".join("?" for _ in ids)
        names = ", ".join(columns)
        values = ", ".join("?" if c == "project" else c for c in columns)
        await self._session.fetch(
            f"INSERT INTO conversation_sessions ({names}) SELECT {values}"
            f" FROM conversation_sessions WHERE project = ? AND session_id IN ({marks})",
            (new, old, *ids),
        )
        for table in _CHILDREN:
            await self._session.fetch(
                f"UPDATE {table} SET project = ? WHERE project = ? AND session_id IN ({marks})",
                (new, old, *ids),
            )
        await self._session.fetch(
            f"DELETE FROM conversation_sessions WHERE project = ? AND session_id IN ({marks})",
            (old, *ids),
        )

    async def _columns(self, table: str) -> list[str]:
        """The table's columns as the store has them (a later migration may add some)."""
        return [str(r[1]) for r in await self._session.fetch(f"PRAGMA table_info({table})")]

    async def _count(self, table: str, project: str) -> int:
        rows = await self._session.fetch(
            f"SELECT count(*) FROM {table} WHERE project = ?", (project,)
        )
        return int(rows[0][0])

    async def _list_coarse(self, old: str, new: str) -> None:
        """A coarse-path project keeps no vec0 rows: its new name must be listed too."""
        exists = await self._session.fetch(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_coarse_projects'"
        )
        if exists:
            await self._session.fetch(
                "INSERT OR IGNORE INTO vector_coarse_projects (project)"
                " SELECT ?2 FROM vector_coarse_projects WHERE project = ?1",
                (old, new),
            )
