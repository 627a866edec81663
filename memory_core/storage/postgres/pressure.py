"""The storage cap's reads and deletes on PostgreSQL (as memory_core.storage.sqlite.pressure).

Deletes take the maintenance lock exclusively, as the prune's do: an add that supersedes a row
shares it, so a row cannot become a superseding one between the re-check and the DELETE.
Vectors go by the foreign-key cascade (pgvector rows are plain rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession, maintenance_lock

__all__ = ["PostgresPressure"]

_REFERENCE = "coalesce(c.last_accessed, c.created_at)"
# As the SQLite twin: used at or before $2, not pinned, superseding no row.
_EVICTABLE = (
    f"c.project = $1 AND {_REFERENCE} <= $2 AND NOT c.pinned"
    " AND NOT EXISTS (SELECT 1 FROM context_snapshots s WHERE s.superseded_by = c.id)"
)


class PostgresPressure:
    """The storage cap's store (ports.pressure), mixed into PostgresMemoryRepository."""

    _session: PostgresSession

    async def project_size(self, project: str) -> int:
        """How many memories a project holds, by the kept counters; see ports.pressure."""
        session = self._session
        async with session.read("project size") as conn:
            value = await conn.fetchval(
                "SELECT coalesce(sum(n), 0) FROM memory_counts WHERE project = $1", project
            )
        return int(value)

    async def projects_over(self, size: int) -> dict[str, int]:
        """Projects holding more than `size` memories, by the kept counters."""
        session = self._session
        async with session.read("projects over cap") as conn:
            rows = await conn.fetch(
                "SELECT project, sum(n) FROM memory_counts GROUP BY project HAVING sum(n) > $1"
                " ORDER BY project",
                size,
            )
        return {str(r[0]): int(r[1]) for r in rows}

    async def eviction_candidates(
        self, project: str, used_before: datetime, *, limit: int
    ) -> list[int]:
        """Up to `limit` evictable ids, fewest uses, then oldest reference time, then id first."""
        session, before = self._session, used_before
        async with session.read("cap candidates") as conn:
            rows = await conn.fetch(
                f"SELECT c.id FROM context_snapshots c WHERE {_EVICTABLE}"
                f" ORDER BY c.access_count, {_REFERENCE}, c.id LIMIT $3",
                project,
                aware(before),
                limit,
            )
        return [int(r[0]) for r in rows]

    async def evict(self, project: str, ids: Sequence[int], used_before: datetime) -> list[int]:
        """Delete those of `ids` still evictable, in one transaction; the ids deleted, ascending."""
        session, before = self._session, used_before
        if not ids:
            return []
        async with session.write("cap eviction") as conn:
            await maintenance_lock(conn)
            # READ COMMITTED re-checks the condition on the newest version of each row.
            rows = await conn.fetch(
                f"DELETE FROM context_snapshots c WHERE c.id = ANY($3::bigint[]) AND {_EVICTABLE}"
                " RETURNING c.id",
                project,
                aware(before),
                PostgresSession.ids(ids),
            )
        return sorted(int(r[0]) for r in rows)
