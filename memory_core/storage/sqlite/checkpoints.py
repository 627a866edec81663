"""WalCheckpoints: a server's WAL checkpoints, run beside its requests instead of inside them.

Trigger: a long-running server (`serve`), whose searches each record an access (one small
write). Why: SQLite checkpoints the WAL in the commit that takes it past 1,000 pages, so one
search in a few hundred paid for copying the WAL into the database: at 100k rows the hybrid
search p95 was 14.8-16.1 ms with it and 12.0-12.3 ms without (300 searches, two runs each;
docs/benchmarks.md). Outcome: the server's own connection no longer checkpoints on commit; a
task on a connection of its own runs a PASSIVE checkpoint every `every_s` seconds (PASSIVE
never waits for readers or writers, and other processes still checkpoint as they always did).
If that connection cannot be opened, nothing changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiosqlite
import structlog

from memory_core.storage.sqlite.connection import open_database

__all__ = ["WalCheckpoints"]

log = structlog.get_logger(__name__)


class WalCheckpoints:
    """A PASSIVE checkpoint every `every_s` seconds, on a connection of its own."""

    def __init__(self, path: Path, *, every_s: float = 1.0) -> None:
        self._path = path
        self._every_s = every_s
        self._db: aiosqlite.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self.ran = asyncio.Event()  # set after each checkpoint (tests)
        self.last: tuple[int, int, int] | None = None

    async def start(self, writer: aiosqlite.Connection) -> None:
        """Take checkpoints off `writer`'s commits and start the task (once)."""
        if self._task is not None:
            return
        try:
            self._db = await open_database(self._path)
        except Exception:
            log.warning("wal_checkpoints.unavailable", exc_info=True)
            return
        await writer.execute("PRAGMA wal_autocheckpoint = 0")
        self._task = asyncio.create_task(self._run())

    async def checkpoint(self) -> tuple[int, int, int]:
        """One PASSIVE checkpoint: (busy, WAL pages, pages checkpointed), as SQLite reports."""
        assert self._db is not None
        rows = list(await self._db.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)"))
        busy, pages, done = rows[0]
        self.last = (int(busy), int(pages), int(done))
        self.ran.set()
        return self.last

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._every_s)
            try:
                await self.checkpoint()
            except Exception:
                # A failed checkpoint loses nothing (the WAL stays); the next one tries again.
                log.info("wal_checkpoints.failed", exc_info=True)

    async def aclose(self) -> None:
        """Stop the task and close its connection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._db is not None:
            await self._db.close()
            self._db = None
