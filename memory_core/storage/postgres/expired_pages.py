"""The prune's candidates a page at a time: EXPIRED rows of a project, oldest use first.

As memory_core.storage.sqlite.expired_pages (why: the prune's dry run sorts every expired
row by use count; how: the (project, reference time) index and a keyset mark), on PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory_core.domain.models import Memory
from memory_core.storage.postgres.rows import COLUMNS, aware, row_to_memory
from memory_core.storage.postgres.session import PostgresSession

__all__ = ["count_expired", "expired_page"]

_REFERENCE = "coalesce(last_accessed, created_at)"
# The prune's own condition (PostgresMemoryRepository.prune_expired).
_EXPIRED = f"project = $1 AND {_REFERENCE} <= $2 AND NOT pinned"


async def expired_page(
    session: PostgresSession,
    project: str,
    archived_after: datetime,
    *,
    after: tuple[datetime, int] | None,
    limit: int,
) -> list[Memory]:
    """Up to `limit` expired rows, oldest reference time (then id) first, after `after`."""
    args: list[Any] = [project, aware(archived_after), limit]
    where = _EXPIRED
    if after is not None:
        where += f" AND ({_REFERENCE}, id) > ($4, $5)"
        args += [aware(after[0]), after[1]]
    async with session.read("prune preview") as conn:
        rows = await conn.fetch(
            f"SELECT {COLUMNS} FROM context_snapshots WHERE {where}"
            f" ORDER BY {_REFERENCE}, id LIMIT $3",
            *args,
        )
    return [row_to_memory(r) for r in rows]


async def count_expired(
    session: PostgresSession, project: str, archived_after: datetime, *, cap: int
) -> int:
    """How many rows the prune would delete, counted up to `cap + 1` (more: `cap + 1`)."""
    async with session.read("prune preview count") as conn:
        value = await conn.fetchval(
            f"SELECT count(*) FROM (SELECT 1 FROM context_snapshots WHERE {_EXPIRED} LIMIT $3) s",
            project,
            aware(archived_after),
            cap + 1,
        )
    return int(value)
