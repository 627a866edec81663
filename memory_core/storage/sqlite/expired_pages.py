"""The prune's candidates a page at a time: EXPIRED rows of a project, oldest use first.

Trigger: the dashboard's forgetting page, which anyone signed in may reload. Why: the prune's
dry run orders by use count first, which no index gives, so it reads and sorts every expired
row (50 ms at 51k expired rows, and growing with them); listing them all besides costs a page
nobody reads. Outcome: the (project, reference time) index gives the same rows oldest use
first, and a page after a keyset mark (the last row's reference time and id) reads only that
page; the count stops at `cap`. An unlimited prune deletes every one of these rows whatever
their order, so the pages together are exactly what it would delete.
"""

from __future__ import annotations

from datetime import datetime

from memory_core.domain.models import Memory
from memory_core.storage.sqlite.kept_counts import REFERENCE
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.times import encode_time

__all__ = ["count_expired", "expired_page"]

# The prune's own condition (SqliteMemoryRepository.prune_expired): expired by reference
# time, and not pinned.
_EXPIRED = f"project = :project AND {REFERENCE} <= :archived_after AND pinned = 0"


async def expired_page(
    session: SqliteSession,
    project: str,
    archived_after: datetime,
    *,
    after: tuple[datetime, int] | None,
    limit: int,
) -> list[Memory]:
    """Up to `limit` expired rows, oldest reference time (then id) first, after `after`."""
    params: dict[str, object] = {
        "project": project,
        "archived_after": encode_time(archived_after),
        "limit": limit,
    }
    where = _EXPIRED
    if after is not None:
        # Written so the index bounds the range (>=), then the tie on the time by id.
        where += (
            f" AND {REFERENCE} >= :after_time AND ({REFERENCE} > :after_time OR id > :after_id)"
        )
        params.update(after_time=encode_time(after[0]), after_id=after[1])
    async with session.read("prune preview"):
        return await session.fetch_memories(
            f"SELECT * FROM context_snapshots WHERE {where} ORDER BY {REFERENCE}, id LIMIT :limit",
            params,
        )


async def count_expired(
    session: SqliteSession, project: str, archived_after: datetime, *, cap: int
) -> int:
    """How many rows the prune would delete, counted up to `cap + 1` (more: `cap + 1`)."""
    params = {"project": project, "archived_after": encode_time(archived_after), "cap": cap + 1}
    async with session.read("prune preview count"):
        rows = await session.fetch(
            f"SELECT count(*) FROM (SELECT 1 FROM context_snapshots WHERE {_EXPIRED} LIMIT :cap)",
            params,
        )
    return int(rows[0][0])
