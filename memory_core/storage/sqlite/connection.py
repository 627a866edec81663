"""Open SQLite connections with sqlite-vec loaded; the one place aiosqlite and sqlean meet."""

from __future__ import annotations

import asyncio
import errno
import functools
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import aiosqlite
import sqlean

from memory_core.errors import StorageError

__all__ = [
    "DriverError",
    "create_private",
    "is_busy",
    "open_database",
    "sqlite_versions",
    "vec0_path",
]

# aiosqlite re-exports the *stdlib* exception classes, which do not catch sqlean's errors.
DriverError: type[Exception] = sqlean.Error

BUSY_TIMEOUT_MS = 5_000
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def is_busy(exc: BaseException) -> bool:
    """Whether a driver error means another connection holds the lock (worth retrying)."""
    if not isinstance(exc, DriverError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


@functools.cache
def vec0_path() -> str:
    """Where sqlite_vec.loadable_path() points, found without importing the package.

    `import sqlite_vec` also imports numpy.typing (~120 ms cold), for helpers this code never
    calls; the hooks and CLI commands open the store but never touch a vector.
    """
    spec = find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StorageError("loading sqlite-vec (reinstall with `pip install sqlite-vec==0.1.9`)")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def _connect(path: str, secure_delete: bool = True) -> Any:
    # Runs inside aiosqlite's worker thread, so the connection never crosses threads.
    conn = sqlean.connect(path, isolation_level=None)  # we issue BEGIN/COMMIT ourselves
    try:
        conn.enable_load_extension(True)
        conn.load_extension(vec0_path())
        conn.enable_load_extension(False)
    except (AttributeError, DriverError) as exc:
        conn.close()
        raise StorageError(
            "loading sqlite-vec (reinstall with `pip install sqlean-py sqlite-vec==0.1.9`)"
        ) from exc
    conn.row_factory = sqlean.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL: a crash loses no committed txn
    # Deleted rows are overwritten with zeros, not left in free pages: a forgotten memory (or
    # a redacted secret's old text) must not survive in the file, nor in a backup of it.
    # Cost measured with bench/secure_delete.py (docs/benchmarks.md).
    conn.execute(f"PRAGMA secure_delete = {'ON' if secure_delete else 'OFF'}")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    return conn


def _make_parent(path: Path) -> None:
    """Create the folder of `path`; a file in the way is reported as such, not as EEXIST."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        ancestors = (path.parent, *path.parent.parents)
        blocker = next((p for p in ancestors if p.exists() and not p.is_dir()), path.parent)
        raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder", str(blocker)) from exc


def create_private(path: Path) -> None:
    """Create an empty database file readable by its owner only (0600), if there is none.

    Memories are private. SQLite creates the -wal and -shm files with the database file's
    mode, so they are 0600 too. An empty file is a valid SQLite database.
    """
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:  # e.g. ENOENT from /proc, EROFS, EACCES: say it was the creation
        raise OSError(exc.errno, f"cannot create files there ({exc.strerror})", str(path)) from exc


async def open_database(path: Path | str, *, secure_delete: bool = True) -> aiosqlite.Connection:
    """Open (creating if needed, mode 0600) the database file with WAL, busy timeout, sqlite-vec.

    Args:
        path: The database file, or ":memory:".
        secure_delete: Zero deleted content (always, but for measuring what that costs).

    Raises:
        StorageError: The file cannot be created or opened, or sqlite-vec cannot be loaded;
            `__cause__` says why (for the person at a terminal; the operation is what a model
            is told).
    """
    target = str(path)
    if target != ":memory:":
        try:
            _make_parent(Path(target))
            create_private(Path(target))
        except OSError as exc:
            raise StorageError("opening the database") from exc
    connect = functools.partial(_connect, target, secure_delete)
    conn = aiosqlite.Connection(connect, iter_chunk_size=256)
    try:
        return await conn
    except (DriverError, StorageError) as exc:
        # aiosqlite has asked its worker thread to stop but does not wait for it; if the
        # event loop closes first (a CLI exiting on this error), the thread dies printing
        # "Event loop is closed". Wait for it.
        await asyncio.to_thread(conn._thread.join, 5)
        if isinstance(exc, StorageError):
            raise
        raise StorageError("opening the database") from exc


async def sqlite_versions(db: aiosqlite.Connection) -> dict[str, str]:
    """SQLite and sqlite-vec versions of a connection (for diagnostics and test headers)."""
    async with db.execute("SELECT sqlite_version(), vec_version()") as cur:
        row = await cur.fetchone()
    assert row is not None
    return {"sqlite": str(row[0]), "sqlite_vec": str(row[1])}
