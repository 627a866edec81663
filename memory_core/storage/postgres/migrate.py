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


# Migration 0013 adds norm_hash, which SQL cannot compute (Unicode NFKC): code fills it.
_MEMORY_TRUTH = "0013_memory_truth"
_FILL_BATCH = 5000


async def fill_norm_hashes(conn: Any) -> int:
    """Give the unkeyed rows written before 0013 their norm_hash; returns how many got one.

    As the SQLite twin: of old rows that normalise alike, the first (lowest id) takes the
    identity, the others keep NULL.
    """
    from memory_core.domain.duplicates import normalised_hash  # only when 0013 is applied

    filled, after = 0, 0
    while True:
        rows = await conn.fetch(
            "SELECT id, project, layer, session_id, content FROM context_snapshots"
            " WHERE id > $1 AND key IS NULL AND norm_hash IS NULL ORDER BY id LIMIT $2",
            after,
            _FILL_BATCH,
        )
        if not rows:
            return filled
        after = int(rows[-1]["id"])
        first: dict[tuple[str, str, str, str], int] = {}
        for r in rows:
            scope = (r["session_id"] or "") if r["layer"] == "working" else ""
            first.setdefault(
                (r["project"], r["layer"], scope, normalised_hash(r["content"])), r["id"]
            )
        ids = list(first.values())
        hashes = [ident[3] for ident in first]
        async with conn.transaction():
            status = await conn.execute(
                "UPDATE context_snapshots AS s SET norm_hash = u.h"
                " FROM unnest($1::bigint[], $2::text[]) AS u(id, h) WHERE s.id = u.id"
                " AND NOT EXISTS (SELECT 1 FROM context_snapshots AS t WHERE t.project = s.project"
                " AND t.layer = s.layer AND t.key IS NULL AND t.norm_hash = u.h"
                " AND (CASE WHEN t.layer = 'working' THEN coalesce(t.session_id, '') ELSE '' END)"
                " = (CASE WHEN s.layer = 'working' THEN coalesce(s.session_id, '') ELSE '' END))",
                ids,
                hashes,
            )
        filled += int(status.split()[-1])


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
        if _MEMORY_TRUTH in done:
            filled = await fill_norm_hashes(conn)
            log.info("migration.norm_hashes", rows=filled, backend="postgres")
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)


async def schema_version(conn: Any) -> int:
    """The number of the newest applied migration (0 for an empty database)."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return schema_number(await _applied(conn))
