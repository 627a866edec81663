"""The storage cap's reads and deletes on SQLite (issue 33.4; the port is ports.pressure).

Sizes come from the kept counters (memory_counts, migrations 0006/0009): the check a write
makes reads a few rows of that table by its primary key, never the memories. Candidates are
ordered by use count, which no index gives, so listing them reads every evictable row of the
project once (bench/pressure.py measures it); the deletes are by id list, one transaction per
batch, and re-check the condition, as the prune's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory_core.storage.sqlite.kept_counts import REFERENCE
from memory_core.storage.sqlite.keyword_tables import indexed_write
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.times import encode_time

__all__ = ["SqlitePressure", "delete_listed"]

# Evictable: used (else created) at or before :before, not pinned, and no row names it as the
# memory that superseded it (deleting it would revive what it corrected). The NOT EXISTS is a
# probe of the partial index idx_snapshots_superseded_by (migration 0013).
_EVICTABLE = (
    f"c.project = :project AND {REFERENCE} <= :before AND c.pinned = 0"
    " AND NOT EXISTS (SELECT 1 FROM context_snapshots s WHERE s.superseded_by = c.id)"
)


class SqlitePressure:
    """The storage cap's store (ports.pressure), mixed into SqliteMemoryRepository."""

    _session: SqliteSession

    async def project_size(self, project: str) -> int:
        """How many memories a project holds, by the kept counters; see ports.pressure."""
        session = self._session
        async with session.read("project size"):
            rows = await session.fetch(
                "SELECT coalesce(sum(n), 0) FROM memory_counts WHERE project = ?", (project,)
            )
        return int(rows[0][0])

    async def projects_over(self, size: int) -> dict[str, int]:
        """Projects holding more than `size` memories (the counters hold a few rows each)."""
        session = self._session
        async with session.read("projects over cap"):
            rows = await session.fetch(
                "SELECT project, sum(n) FROM memory_counts GROUP BY project HAVING sum(n) > ?"
                " ORDER BY project",
                (size,),
            )
        return {str(r[0]): int(r[1]) for r in rows}

    async def eviction_candidates(
        self, project: str, used_before: datetime, *, limit: int
    ) -> list[int]:
        """Up to `limit` evictable ids, fewest uses, then oldest reference time, then id first."""
        session, before = self._session, used_before
        async with session.read("cap candidates"):
            rows = await session.fetch(
                f"SELECT c.id FROM context_snapshots c WHERE {_EVICTABLE}"
                f" ORDER BY c.access_count, {REFERENCE}, c.id LIMIT :limit",
                {"project": project, "before": encode_time(before), "limit": limit},
            )
        return [int(r[0]) for r in rows]

    async def evict(self, project: str, ids: Sequence[int], used_before: datetime) -> list[int]:
        """Delete those of `ids` still evictable, in one transaction; the ids deleted, ascending."""
        session, before = self._session, used_before
        if not ids:
            return []
        listed = ", ".join(str(int(i)) for i in ids)  # ints from our own listing
        async with indexed_write(session, "cap eviction"):
            doomed = [
                int(r[0])
                for r in await session.fetch(
                    "SELECT c.id FROM context_snapshots c"
                    f" WHERE c.id IN ({listed}) AND {_EVICTABLE} ORDER BY c.id",
                    {"project": project, "before": encode_time(before)},
                )
            ]
            await delete_listed(session, doomed)
        return doomed


async def delete_listed(session: SqliteSession, ids: Sequence[int]) -> None:
    """Delete rows `ids` and their vectors inside the caller's write transaction.

    Trigger: every row deleted also drops its vectors, through a foreign-key cascade and a
    trigger that deletes one vec0 row per statement. Why: vec0 deletes row by row cost ~100 us
    each, by an IN list ~37 us (at 100k rows). Outcome: the vectors go first, by id list.
    """
    if not ids:
        return
    marks = ", ".join(str(int(i)) for i in ids)
    vec0 = await session.fetch("SELECT 1 FROM sqlite_master WHERE name = 'context_vectors'")
    if vec0:
        await session.fetch(f"DELETE FROM context_vectors WHERE id IN ({marks})")
    await session.fetch(f"DELETE FROM context_embeddings WHERE id IN ({marks})")
    await session.fetch(f"DELETE FROM context_snapshots WHERE id IN ({marks})")
