"""Forward-only migrations: apply migrations/sqlite/NNNN_*.sql in order, each in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import structlog

from memory_core.errors import StorageError
from memory_core.storage.migrations import (
    load_migrations,
    migrations_dir,
    pending_migrations,
    schema_number,
)
from memory_core.storage.sqlite.connection import DriverError
from memory_core.storage.sqlite.keyword_tables import build_pending_keyword_tables

__all__ = ["apply_migrations", "default_migrations_dir", "schema_version"]

log = structlog.get_logger(__name__)

# From this migration on, each project's keyword table is built by code (keyword_tables).
_KEYWORD_TABLES = "0011_project_keyword_tables"


def default_migrations_dir() -> Path:
    """Where the SQLite migration files are (packaged, else the checkout's migrations/sqlite)."""
    return migrations_dir("sqlite")


async def _applied(db: aiosqlite.Connection) -> set[str]:
    async with db.execute("SELECT name FROM schema_migrations") as cur:
        return {str(row[0]) for row in await cur.fetchall()}


async def apply_migrations(db: aiosqlite.Connection, directory: Path | None = None) -> list[str]:
    """Apply every pending migration; returns the names applied (empty when up to date).

    Each file and its schema_migrations row commit together, so a crash leaves either both or
    neither. Several processes may start at once on one file: a loser of that race finds the
    migration recorded after its own attempt fails, and moves on.

    Raises:
        SchemaMismatchError: The database has migrations this code does not know (it is newer).
        StorageError: A migration failed.
    """
    migrations = load_migrations(directory or default_migrations_dir())
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done: list[str] = []
    applied = await _applied(db)
    for migration in pending_migrations(migrations, applied):
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        # executescript ignores isolation_level, so the transaction is spelled out in the script.
        # The name is safe to inline: _NAME admits only digits, lowercase letters and underscores.
        script = (
            f"BEGIN IMMEDIATE;\n{migration.sql}\n;"
            f"INSERT INTO schema_migrations (name, applied_at) "
            f"VALUES ('{migration.name}', '{stamp}');\nCOMMIT;"
        )
        try:
            await db.executescript(script)
        except DriverError as exc:
            await _rollback(db)
            if migration.name in await _applied(db):
                continue  # another process applied it first
            raise StorageError(f"applying migration {migration.name}") from exc
        log.info("migration.applied", name=migration.name)
        done.append(migration.name)
    if _MEMORY_TRUTH in done:
        try:
            filled = await fill_norm_hashes(db)
        except DriverError as exc:
            raise StorageError("normalising the identities of stored memories") from exc
        log.info("migration.norm_hashes", rows=filled)
    # 0011 registers the projects whose keyword tables code must build (SQL cannot name a
    # table from a value); a crash before this leaves them registered, built at the next open.
    if _KEYWORD_TABLES not in applied and _KEYWORD_TABLES not in done:
        return done
    try:
        built = await build_pending_keyword_tables(db)
    except DriverError as exc:
        raise StorageError("building the keyword indexes") from exc
    if built:
        log.info("keyword_tables.built", tables=built)
    return done


# Migration 0013 adds norm_hash, which SQL cannot compute (Unicode NFKC): code fills it.
_MEMORY_TRUTH = "0013_memory_truth"
_FILL_BATCH = 5000


async def fill_norm_hashes(db: aiosqlite.Connection) -> int:
    """Give the unkeyed rows written before 0013 their norm_hash; returns how many got one.

    Batches by id, each in its own transaction. Of two old rows that normalise alike (the same
    identity), the first keeps the identity and the second keeps NULL (`OR IGNORE`): both stay,
    as they were, and a later write finds the first.
    """
    from memory_core.domain.duplicates import normalised_hash  # only when 0013 is applied

    filled, after = 0, 0
    while True:
        rows = list(
            await db.execute_fetchall(
                "SELECT id, content FROM context_snapshots WHERE id > ? AND key IS NULL"
                " AND norm_hash IS NULL ORDER BY id LIMIT ?",
                (after, _FILL_BATCH),
            )
        )
        if not rows:
            return filled
        after = int(rows[-1][0])
        await db.execute("BEGIN IMMEDIATE")
        try:
            cur = await db.executemany(
                "UPDATE OR IGNORE context_snapshots SET norm_hash = ? WHERE id = ?",
                [(normalised_hash(str(content)), int(i)) for i, content in rows],
            )
            filled += max(cur.rowcount, 0)
            await db.execute("COMMIT")
        except BaseException:
            await _rollback(db)
            raise


async def _rollback(db: aiosqlite.Connection) -> None:
    if db.in_transaction:
        await db.execute("ROLLBACK")


async def schema_version(db: aiosqlite.Connection) -> int:
    """The number of the newest applied migration (0 for an empty database)."""
    async with db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ) as cur:
        if await cur.fetchone() is None:
            return 0
    return schema_number(await _applied(db))
