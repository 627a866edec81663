"""Rewrite the SQLite file without its free pages (`memstrata compact-file`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from memory_core.errors import StorageError
from memory_core.storage.sqlite.connection import DriverError, open_database

__all__ = ["CompactFileReport", "compact_file"]


class CompactFileReport(BaseModel):
    """Sizes of the database file (and its WAL) before and after VACUUM."""

    model_config = ConfigDict(frozen=True)

    bytes_before: int
    bytes_after: int
    free_pages_before: int

    @property
    def freed(self) -> int:
        """Bytes the file (with its WAL) shrank by; never negative."""
        return max(self.bytes_before - self.bytes_after, 0)


def _size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


async def compact_file(db: Path) -> CompactFileReport:
    """VACUUM the database, then checkpoint and truncate its WAL.

    `secure_delete` zeroes what is deleted from now on; VACUUM rewrites the file from its
    live rows, so text deleted before it was on (older stores) leaves the file too. The WAL
    is truncated after the checkpoint, so no old page image stays in it either.

    Raises:
        StorageError: The file could not be opened or rewritten (another process held a
            write lock past the busy timeout, or the disk is full: VACUUM needs room for a
            second copy); the file is unchanged.
    """
    before = _size(db)
    conn = await open_database(db)
    try:
        rows = await conn.execute_fetchall("PRAGMA freelist_count")
        free_pages = int(next(iter(rows))[0])
        # A deleted row leaves its words in FTS5's index segments (as a delete marker beside
        # them) until the segments are merged; VACUUM copies segments as they are, so merge
        # them first.
        tables = await conn.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'"
        )
        for (name,) in tables:
            await conn.execute(f'INSERT INTO "{name}"("{name}") VALUES (\'optimize\')')
        await conn.commit()
        await conn.execute("VACUUM")
        await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except DriverError as exc:
        raise StorageError("compacting the database file") from exc
    finally:
        await conn.close()
    return CompactFileReport(
        bytes_before=before, bytes_after=_size(db), free_pages_before=free_pages
    )
