"""Forward-only migrations for PostgreSQL: migrations/postgres/NNNN_*.sql in order.

Each file and its schema_migrations row commit in one transaction. Replicas that start at once
serialise on a session advisory lock, so exactly one applies a pending file and the others
find it recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from memory_core.errors import StorageError
from memory_core.storage.migrations import (
    Migration,
    load_migrations,
    migrations_dir,
    pending_migrations,
    schema_number,
)

__all__ = ["MIGRATION_LOCK", "apply_migrations", "default_migrations_dir", "schema_version"]

log = structlog.get_logger(__name__)

# An arbitrary constant shared by every memstrata process on a database ("mems" in ASCII).
MIGRATION_LOCK = 0x6D656D73


def default_migrations_dir() -> Path:
    """Where the PostgreSQL migration files are (packaged, else migrations/postgres)."""
    return migrations_dir("postgres")


async def _applied(conn: Any) -> set[str]:
    return {str(r[0]) for r in await conn.fetch("SELECT name FROM schema_migrations")}


async def apply_migrations(conn: Any, directory: Path | None = None) -> list[str]:
    """Apply every pending migration on `conn`; returns the names applied.

    Raises:
        SchemaMismatchError: The database has migrations this code does not know (it is newer).
        StorageError: A migration failed (its transaction is rolled back).
    """
    migrations: list[Migration] = load_migrations(directory or default_migrations_dir())
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done: list[str] = []
        for migration in pending_migrations(migrations, await _applied(conn)):
            try:
                async with conn.transaction():
                    await conn.execute(migration.sql)  # no arguments: several statements run
                    await conn.execute(
                        "INSERT INTO schema_migrations (name) VALUES ($1)", migration.name
                    )
            except Exception as exc:
                raise StorageError(f"applying migration {migration.name}") from exc
            log.info("migration.applied", name=migration.name, backend="postgres")
            done.append(migration.name)
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)


async def schema_version(conn: Any) -> int:
    """The number of the newest applied migration (0 for an empty database)."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return schema_number(await _applied(conn))
