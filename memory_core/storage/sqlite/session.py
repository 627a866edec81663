"""One aiosqlite connection shared by the SQLite adapters, with its transaction discipline."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import aiosqlite
import structlog

from memory_core.domain.models import Memory
from memory_core.errors import StorageError
from memory_core.storage.sqlite.connection import DriverError, is_busy
from memory_core.storage.sqlite.rows import row_to_memory

__all__ = ["Params", "SqliteSession"]

Params = Sequence[Any] | dict[str, Any]
_T = TypeVar("_T")

log = structlog.get_logger(__name__)

# BEGIN IMMEDIATE already waits up to the busy timeout (connection.BUSY_TIMEOUT_MS) for another
# process's write lock; these retries cover the rest (a long writer elsewhere, SQLITE_BUSY
# returned early without waiting), with full jitter so that waiting processes do not retry in
# lockstep.
BEGIN_ATTEMPTS = 6
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 2.0

# One lock per connection, however many adapters wrap it: two locks on one connection would
# let their transactions interleave ("cannot start a transaction within a transaction").
_LOCKS: weakref.WeakKeyDictionary[aiosqlite.Connection, asyncio.Lock] = weakref.WeakKeyDictionary()


class _Deferred:
    """A connection's writes left to run after the request that asked for them (`defer`)."""

    def __init__(self) -> None:
        self.writes: deque[tuple[str, str, Params]] = deque()
        self.task: asyncio.Task[None] | None = None


_DEFERRED: weakref.WeakKeyDictionary[aiosqlite.Connection, _Deferred] = weakref.WeakKeyDictionary()


class SqliteSession:
    """Serialises use of one connection and wraps driver errors in StorageError.

    One aiosqlite connection runs one statement at a time, and a transaction spans several
    awaits, so an asyncio lock keeps concurrent tool calls from interleaving inside another's
    transaction. Writes take the database write lock up front (BEGIN IMMEDIATE), which makes
    check-then-write sequences safe against other processes sharing the file.
    """

    def __init__(self, db: aiosqlite.Connection, *, defers: bool = False) -> None:
        self.db = db
        self.defers = defers
        self._lock = _LOCKS.setdefault(db, asyncio.Lock())
        self._deferred = _DEFERRED.setdefault(db, _Deferred())

    def defer(self, operation: str, sql: str, params: Params) -> None:
        """Run one writing statement after the current request, ahead of any later use.

        Trigger: a write the caller need not wait for (recording that search hits were
        handed out), on a session made with `defers` (a serving process). Why: it cost a
        search ~0.6 ms at 100k rows, and all of a busy database's waiting (another process's
        write lock) when there was one. Outcome: it runs in a task of its own; any later use
        of this connection (`read`, `write`, `snapshot`) runs what is queued first, so this
        process reads what it deferred. A failure is logged, not raised: nobody is waiting.
        """
        self._deferred.writes.append((operation, sql, params))
        task = self._deferred.task
        if task is None or task.done():
            self._deferred.task = asyncio.get_running_loop().create_task(self.drain())

    async def drain(self) -> None:
        """Run the deferred writes still queued, and wait for one already running."""
        writes = self._deferred.writes
        while writes:
            operation, sql, params = writes.popleft()
            async with self._lock:
                try:
                    await self._when_not_busy(
                        functools.partial(self.db.execute, sql, params), operation
                    )
                except Exception as exc:  # nobody waits for it: log it, keep the connection
                    log.warning(
                        "storage.deferred_write_failed", operation=operation, error=str(exc)
                    )
        task = self._deferred.task
        if task is not None and task is not asyncio.current_task() and not task.done():
            await asyncio.wait({task})

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """This session's turn on the connection: deferred writes run first, then the lock."""
        if self._deferred.writes:
            await self.drain()
        async with self._lock:
            yield

    @asynccontextmanager
    async def read(self, operation: str) -> AsyncIterator[aiosqlite.Connection]:
        """Run statements outside an explicit transaction."""
        async with self._turn():
            try:
                yield self.db
            except DriverError as exc:
                raise StorageError(operation) from exc

    @asynccontextmanager
    async def write(self, operation: str) -> AsyncIterator[aiosqlite.Connection]:
        """Run statements in one IMMEDIATE transaction, rolled back on any exception."""
        async with self._turn(), self._transaction("BEGIN IMMEDIATE", operation):
            yield self.db

    @asynccontextmanager
    async def snapshot(self, operation: str) -> AsyncIterator[aiosqlite.Connection]:
        """Run reads in one deferred transaction, so they all see the same data."""
        async with self._turn(), self._transaction("BEGIN", operation):
            yield self.db

    async def _begin(self, begin: str, operation: str) -> None:
        """Start a transaction, retrying a busy database a bounded number of times.

        Only BEGIN is retried: nothing of the caller's has run yet, so a retry repeats no work.
        """
        await self._when_not_busy(lambda: self.db.execute(begin), operation)

    async def _when_not_busy(self, attempt: Callable[[], Awaitable[_T]], operation: str) -> _T:
        """Run `attempt` until it does not fail on a busy database (a bounded number of times).

        `attempt` must have changed nothing when it fails busy (a BEGIN; one statement that is
        its own transaction).
        """
        for n in range(1, BEGIN_ATTEMPTS + 1):
            try:
                return await attempt()
            except DriverError as exc:
                if not is_busy(exc) or n == BEGIN_ATTEMPTS:
                    raise
                await self._rollback()  # normally a no-op; guarantees a clean connection
                delay = random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**n))
                log.info("storage.busy_retry", operation=operation, attempt=n, delay=delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # the last attempt returns or raises

    @asynccontextmanager
    async def _transaction(self, begin: str, operation: str) -> AsyncIterator[None]:
        try:
            await self._begin(begin, operation)
            yield
            await self.db.execute("COMMIT")
        except BaseException as exc:
            await self._rollback()
            if isinstance(exc, DriverError):
                raise StorageError(operation) from exc
            raise

    async def _rollback(self) -> None:
        # Trigger: an error or a cancellation anywhere in the transaction, even while BEGIN waits
        # on another process's lock or COMMIT is in flight. Why: aiosqlite still runs a
        # statement whose caller was cancelled, so `in_transaction` may not be true *yet*; the
        # worker runs statements in order, so a ROLLBACK queued now runs after it. Outcome: the
        # shared connection never keeps an orphan transaction (and its write lock); "no
        # transaction is active" just means there was nothing to undo. (anyio loads here, on
        # the error path: a cold `stats` or hook never needs it.)
        import anyio

        with anyio.CancelScope(shield=True), contextlib.suppress(DriverError):
            await self.db.execute("ROLLBACK")

    async def fetch(self, sql: str, params: Params = ()) -> list[Any]:
        """All rows of a statement (call inside `read` or `write`).

        One hop to the driver's thread (execute and fetch together): the cursor form took
        three (execute, fetchall, close), ~0.1 ms each on this machine, and a search or a
        recall runs five to eight statements.
        """
        return list(await self.db.execute_fetchall(sql, params))

    async def write_memories(self, operation: str, sql: str, params: Params) -> list[Memory]:
        """Run one writing statement as its own transaction; its RETURNING rows as Memory objects.

        Trigger: a write that is a single statement (recording an access). Why: outside an
        explicit transaction SQLite makes the statement atomic by itself, so BEGIN IMMEDIATE
        and COMMIT were two more hops to the driver's thread on every search. Outcome: one
        hop; a busy database is retried as BEGIN is (the failed statement changed nothing).
        """
        async with self._turn():
            try:
                rows = await self._when_not_busy(
                    lambda: self.db.execute_fetchall(sql, params), operation
                )
            except DriverError as exc:
                raise StorageError(operation) from exc
        return [row_to_memory(row) for row in rows]

    async def fetch_memories(self, sql: str, params: Params = ()) -> list[Memory]:
        """Rows of context_snapshots as Memory objects."""
        return [row_to_memory(row) for row in await self.fetch(sql, params)]

    async def one(self, sql: str, params: Params) -> Memory | None:
        """The first Memory of a statement, or None."""
        rows = await self.fetch_memories(sql, params)
        return rows[0] if rows else None
