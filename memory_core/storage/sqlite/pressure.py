"""The storage cap's reads and deletes on SQLite (issue 33.4; the port is ports.pressure).

Sizes come from the kept counters (memory_counts, migrations 0006/0009): the check a write
makes reads a few rows of that table by its primary key, never the memories. Candidates are
ordered by use count, which no index gives, so listing them reads every evictable row of the
project once, in pages (bench/pressure.py measures it); the deletes are by id list, one
transaction per batch, and re-check the condition, as the prune's do.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime

from memory_core.storage.sqlite.kept_counts import REFERENCE
from memory_core.storage.sqlite.keyword_tables import indexed_write
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.times import encode_time

__all__ = ["LIST_PAGE", "SqlitePressure", "delete_listed"]

# Rows one read of the candidate listing holds the connection for (about 0.1 s at 1M rows).
LIST_PAGE = 20_000

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
        """Up to `limit` evictable ids, fewest uses, then oldest reference time, then id first.

        Trigger: use counts have no index, so one statement would read and sort every
        evictable row while holding the store's one connection (4.6 s at 1M rows, 600k of
        them EXPIRED; bench/pressure.py), stalling every other call of the server. Why not an
        index on the use count: it would be rewritten on every read of a memory, for a cap
        that is off by default. Outcome: the rows are read in pages of LIST_PAGE, oldest first
        along idx_snapshots_project_reference, each page its own read (other calls run
        between them), and the best `limit` are kept as they go.
        """
        best: list[tuple[int, str, int]] = []
        after: tuple[str, int] | None = None
        params: dict[str, object] = {
            "project": project,
            "before": encode_time(used_before),
            "page": LIST_PAGE,
        }
        while True:
            where = _EVICTABLE
            if after is not None:
                # As expired_pages: written so the index bounds the range (>=), then the tie.
                where += (
                    f" AND {REFERENCE} >= :after_time"
                    f" AND ({REFERENCE} > :after_time OR c.id > :after_id)"
                )
                params.update(after_time=after[0], after_id=after[1])
            async with self._session.read("cap candidates"):
                rows = await self._session.fetch(
                    f"SELECT c.access_count, {REFERENCE}, c.id FROM context_snapshots c"
                    f" WHERE {where} ORDER BY {REFERENCE}, c.id LIMIT :page",
                    params,
                )
            page = [(int(r[0]), str(r[1]), int(r[2])) for r in rows]
            best = heapq.nsmallest(limit, best + page)
            if len(page) < LIST_PAGE:
                return [row[2] for row in best]
            after = (page[-1][1], page[-1][2])

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
