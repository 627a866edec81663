"""A server checkpoints its WAL on a connection of its own, not in the commits of its requests
(storage.sqlite.checkpoints)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite

from memory_core.storage.sqlite import apply_migrations, open_database
from memory_core.storage.sqlite.checkpoints import WalCheckpoints


async def setting(db: aiosqlite.Connection, sql: str) -> int:
    async with db.execute(sql) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_the_writer_no_longer_checkpoints_and_the_task_does(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    writer = await open_database(path)
    checkpoints = WalCheckpoints(path, every_s=0.01)
    try:
        await apply_migrations(writer)
        assert await setting(writer, "PRAGMA wal_autocheckpoint") == 1000
        await checkpoints.start(writer)
        assert await setting(writer, "PRAGMA wal_autocheckpoint") == 0
        await writer.execute("CREATE TABLE filler (x BLOB)")
        await writer.executemany(
            "INSERT INTO filler VALUES (randomblob(4000))", [() for _ in range(1500)]
        )
        await writer.commit()
        # 1,500 pages and more in the WAL, past SQLite's own threshold: the commit left them.
        checkpoints.ran.clear()
        await asyncio.wait_for(checkpoints.ran.wait(), timeout=120)
        assert checkpoints.last is not None
        busy, pages, done = checkpoints.last
        assert busy == 0 and pages >= 1500 and done == pages
        assert await setting(writer, "SELECT count(*) FROM filler") == 1500
    finally:
        await checkpoints.aclose()
        await writer.close()
