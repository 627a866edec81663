"""Read-only probes of the SQLite driver and of a database file, for `memstrata doctor`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sqlean

from memory_core.errors import StorageError
from memory_core.storage.sqlite.connection import DriverError, vec0_path

__all__ = ["DatabaseProbe", "DriverProbe", "probe_database", "probe_driver"]


@dataclass(frozen=True)
class DriverProbe:
    """What the SQLite driver can do: each `*_error` is None when that part works."""

    sqlite_version: str
    load_extension_error: str | None
    vec_version: str | None
    vec_error: str | None
    fts5_error: str | None


@dataclass(frozen=True)
class DatabaseProbe:
    """What an existing database file holds, read without changing it."""

    applied_migrations: list[str] = field(default_factory=list)
    embedding_model: str | None = None
    embedding_dims: str | None = None
    quick_check: str = "ok"
    open_error: str | None = None


def probe_driver() -> DriverProbe:
    """Open an in-memory database and try sqlite-vec and FTS5 on it."""
    conn = sqlean.connect(":memory:")
    try:
        version = str(conn.execute("SELECT sqlite_version()").fetchone()[0])
        load_error = vec_version = vec_error = fts5_error = None
        try:
            conn.enable_load_extension(True)
        except (AttributeError, DriverError) as exc:
            load_error = f"{type(exc).__name__}: {exc}"
        if load_error is None:
            try:
                conn.load_extension(vec0_path())
                vec_version = str(conn.execute("SELECT vec_version()").fetchone()[0])
            except (DriverError, OSError, StorageError) as exc:
                vec_error = f"{type(exc).__name__}: {exc}"
        else:
            vec_error = "extension loading is unavailable"
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(content)")
            conn.execute("INSERT INTO probe VALUES ('fts five works')")
            conn.execute("SELECT rowid FROM probe WHERE probe MATCH 'five'").fetchall()
        except DriverError as exc:
            fts5_error = f"{type(exc).__name__}: {exc}"
        return DriverProbe(version, load_error, vec_version, vec_error, fts5_error)
    finally:
        conn.close()


def probe_database(path: Path) -> DatabaseProbe:
    """Read the applied migrations, the recorded embedding model and a quick_check of a file.

    The file is opened read-only (`mode=ro`), so probing never creates or migrates it.
    """
    try:
        conn = sqlean.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except DriverError as exc:
        return DatabaseProbe(open_error=f"{type(exc).__name__}: {exc}")
    try:
        tables = {
            str(r[0])
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        }
        applied: list[str] = []
        if "schema_migrations" in tables:
            rows = conn.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
            applied = [str(r[0]) for r in rows]
        meta: dict[str, str] = {}
        if "meta" in tables:
            meta = {
                str(r[0]): str(r[1]) for r in conn.execute("SELECT key, value FROM meta").fetchall()
            }
        # quick_check skips the index cross-checks of integrity_check: seconds, not minutes.
        check = "; ".join(str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall())
        return DatabaseProbe(
            applied_migrations=applied,
            embedding_model=meta.get("embedding_model"),
            embedding_dims=meta.get("embedding_dims"),
            quick_check=check,
        )
    except DriverError as exc:
        return DatabaseProbe(open_error=f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
