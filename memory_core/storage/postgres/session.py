"""A pool shared by the PostgreSQL adapters, with their transaction discipline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
import structlog

from memory_core.domain.models import Memory
from memory_core.errors import StorageError
from memory_core.storage.postgres.connection import DRIVER_ERRORS
from memory_core.storage.postgres.rows import row_to_memory

__all__ = [
    "PostgresSession",
    "maintenance_lock",
    "rowcount",
]

T = TypeVar("T")

log = structlog.get_logger(__name__)

# A deadlock's victim runs again this many times in all. Its transaction was rolled back whole,
# so running it again changes nothing twice; a third deadlock in a row is a real fault.
DEADLOCK_ATTEMPTS = 3


def rowcount(status: str) -> int:
    """Rows touched, from a command status such as "UPDATE 3" or "DELETE 0"."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class PostgresSession:
    """Hands out pooled connections and wraps driver errors in StorageError.

    Unlike the SQLite session there is no process-wide lock: each operation has its own
    connection, and the database arbitrates between them (and between replicas).
    """

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    @asynccontextmanager
    async def read(self, operation: str) -> AsyncIterator[Any]:
        """A connection for statements outside an explicit transaction."""
        try:
            async with self.pool.acquire() as conn:
                yield conn
        except DRIVER_ERRORS as exc:
            raise StorageError(operation) from exc

    @asynccontextmanager
    async def write(self, operation: str) -> AsyncIterator[Any]:
        """A connection inside one READ COMMITTED transaction, rolled back on any exception."""
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                yield conn
        except DRIVER_ERRORS as exc:
            raise StorageError(operation) from exc

    async def write_retried(self, operation: str, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(conn)` in one write transaction, run again when it is a deadlock's victim.

        For writes that lock many rows in the order the plan visits them beside writers that
        lock rows and counter rows in another (an access record beside an add that supersedes
        one of its rows): either order is right, so the database breaks the cycle and the
        victim simply runs again, as PostgreSQL's documentation advises.
        """
        for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
            try:
                async with self.pool.acquire() as conn, conn.transaction():
                    return await work(conn)
            except asyncpg.DeadlockDetectedError as exc:
                if attempt == DEADLOCK_ATTEMPTS:
                    raise StorageError(operation) from exc
                # Rare (two writers crossing on the same rows); many in the log name a hot spot.
                log.info("storage.deadlock_retried", operation=operation, attempt=attempt)
            except DRIVER_ERRORS as exc:
                raise StorageError(operation) from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    @asynccontextmanager
    async def snapshot(self, operation: str) -> AsyncIterator[Any]:
        """A read-only REPEATABLE READ transaction, so its reads all see the same data."""
        try:
            async with (
                self.pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                yield conn
        except DRIVER_ERRORS as exc:
            raise StorageError(operation) from exc

    @staticmethod
    async def memories(conn: Any, sql: str, *args: Any) -> list[Memory]:
        """Rows of context_snapshots as Memory objects."""
        return [row_to_memory(r) for r in await conn.fetch(sql, *args)]

    @staticmethod
    async def one(conn: Any, sql: str, *args: Any) -> Memory | None:
        """The first Memory of a statement, or None."""
        row = await conn.fetchrow(sql, *args)
        return row_to_memory(row) if row is not None else None

    @staticmethod
    def ids(values: Sequence[int]) -> list[int]:
        """Ids as a list of ints, for a bigint[] parameter."""
        return [int(v) for v in values]


_MAINTENANCE_LOCK = "memstrata:tier-maintenance"


async def maintenance_lock(conn: Any, *, shared: bool = False) -> None:
    """Order the transactions that update or delete many rows by tier.

    A recalculation, a prune and a batch of access records each lock their rows in whatever
    order the plan visits them, and a prune holds counter rows (memory_counts) from its
    recalculation while its DELETE locks rows: two of them at once could deadlock (seen:
    a scheduled recalculation beside a client's prune). An add that finds a duplicate could
    also see it pruned before its UPDATE. Maintenance takes this lock exclusively; adds and
    access records share it, first thing in the transaction, so they still run side by side
    but never interleave with maintenance (as SQLite's single writer never lets them).
    """
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    await conn.execute(f"SELECT {function}(hashtextextended($1, 0))", _MAINTENANCE_LOCK)
