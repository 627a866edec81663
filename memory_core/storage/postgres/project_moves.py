"""PostgresProjectMoves: the ProjectMoves port on PostgreSQL (same semantics as SQLite).

The statement triggers of 0006/0009 move memory_counts with an UPDATE of `project`; the
tsvector and pgvector columns live on the row, so nothing else follows a memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_core.ports.project_moves import START_DIRECTORY, ProjectMove, StartDirectories
from memory_core.storage.postgres.session import PostgresSession, rowcount

__all__ = ["PostgresProjectMoves"]

_CHILDREN = (
    "conversation_summaries",
    "conversation_entries",
    "conversation_exchanges",
    "tool_result_cache",
)

# A memory the new name already holds by the identity rules of 0001 (ux_snapshots_key and
# ux_snapshots_content) stays where it is.
_MOVE_MEMORIES = """
UPDATE context_snapshots AS c SET project = $2
WHERE c.project = $1 AND NOT EXISTS (
    SELECT 1 FROM context_snapshots AS n
    WHERE n.project = $2 AND n.layer = c.layer AND (
        (c.key IS NOT NULL AND n.key = c.key)
        OR (c.key IS NULL AND n.key IS NULL AND n.content_hash = c.content_hash
            AND (c.layer <> 'working'
                 OR coalesce(n.session_id, '') = coalesce(c.session_id, '')))))
"""


class PostgresProjectMoves:
    """Renames in one transaction (a row written meanwhile under the old name stays there)."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def holds_rows(self, project: str) -> bool:
        """True when the project has a memory, a conversation session or a hook session."""
        async with self._session.read("looking up a project") as conn:
            found = await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM context_snapshots WHERE project = $1)"
                " OR EXISTS (SELECT 1 FROM conversation_sessions WHERE project = $1)"
                " OR EXISTS (SELECT 1 FROM hook_sessions WHERE project = $1)",
                project,
            )
        return bool(found)

    async def start_directories(self, project: str) -> StartDirectories:
        """Where the project's hook sessions started (see StartDirectories)."""
        async with self._session.snapshot("reading where a project's sessions started") as conn:
            counts = await conn.fetchrow(
                "SELECT count(*) AS total,"
                " count(*) FILTER (WHERE strpos(start_context, $2) = 0) AS unnamed"
                " FROM hook_sessions WHERE project = $1 AND start_context IS NOT NULL",
                project,
                START_DIRECTORY,
            )
            named = await conn.fetch(
                "SELECT DISTINCT split_part("
                " substr(start_context, strpos(start_context, $2) + length($2)), E'\\n', 1)"
                " FROM hook_sessions WHERE project = $1 AND strpos(start_context, $2) > 0",
                project,
                START_DIRECTORY,
            )
        return StartDirectories(
            frozenset(str(r[0]) for r in named), int(counts["total"]), int(counts["unnamed"])
        )

    async def move(self, old: str, new: str) -> ProjectMove:
        """Move `old`'s memories, conversations and hook sessions to `new`, in one transaction."""
        async with self._session.write("moving a project") as conn:
            moved = rowcount(await conn.execute(_MOVE_MEMORIES, old, new))
            sessions = [
                str(r[0])
                for r in await conn.fetch(
                    "SELECT session_id FROM conversation_sessions AS s WHERE project = $1"
                    " AND NOT EXISTS (SELECT 1 FROM conversation_sessions AS n"
                    " WHERE n.project = $2 AND n.session_id = s.session_id)",
                    old,
                    new,
                )
            ]
            if sessions:
                await _move_sessions(conn, old, new, sessions)
            hooks = rowcount(
                await conn.execute(
                    "UPDATE hook_sessions SET project = $2 WHERE project = $1 AND session_id"
                    " NOT IN (SELECT session_id FROM hook_sessions WHERE project = $2)",
                    old,
                    new,
                )
            )
            kept = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM context_snapshots WHERE project = $1) AS memories,"
                " (SELECT count(*) FROM conversation_sessions WHERE project = $1) AS sessions,"
                " (SELECT count(*) FROM hook_sessions WHERE project = $1) AS hooks",
                old,
            )
        return ProjectMove(
            memories=moved,
            memories_kept=int(kept["memories"]),
            sessions=len(sessions),
            sessions_kept=int(kept["sessions"]),
            hook_sessions=hooks,
            hook_sessions_kept=int(kept["hooks"]),
        )


async def _move_sessions(conn: Any, old: str, new: str, ids: Sequence[str]) -> None:
    """Copy the sessions under `new`, move their rows, drop the old sessions.

    The child tables' foreign keys name (project, session_id) without ON UPDATE CASCADE,
    so the parent cannot be renamed in place while children point at it.
    """
    columns = [
        str(r[0])
        for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = 'conversation_sessions' ORDER BY ordinal_position"
        )
    ]
    names = ", ".join(columns)
    values = ", ".join("$2" if c == "project" else c for c in columns)
    await conn.execute(
        f"INSERT INTO conversation_sessions ({names}) SELECT {values}"
        " FROM conversation_sessions WHERE project = $1 AND session_id = ANY($3::text[])",
        old,
        new,
        list(ids),
    )
    for table in _CHILDREN:
        await conn.execute(
            f"UPDATE {table} SET project = $2 WHERE project = $1 AND session_id = ANY($3::text[])",
            old,
            new,
            list(ids),
        )
    await conn.execute(
        "DELETE FROM conversation_sessions WHERE project = $1 AND session_id = ANY($2::text[])",
        old,
        list(ids),
    )
