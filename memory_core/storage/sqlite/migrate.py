"""Forward-only migrations: apply migrations/sqlite/NNNN_*.sql in order, each in one transaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import structlog

from memory_core.errors import SchemaMismatchError, StorageError
from memory_core.storage.sqlite.connection import DriverError

__all__ = [
    "Migration",
    "apply_migrations",
    "default_migrations_dir",
    "load_migrations",
    "schema_version",
]

log = structlog.get_logger(__name__)

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    """One numbered SQL file."""

    number: int
    name: str
    sql: str


def default_migrations_dir() -> Path:
    """Where the SQL files are: in the installed wheel, else the checkout's migrations/."""
    packaged = Path(__file__).with_name("sql")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "migrations" / "sqlite"


def load_migrations(directory: Path | None = None) -> list[Migration]:
    """Read and order the migration files; numbers must be unique and contiguous from 1."""
    folder = directory or default_migrations_dir()
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise StorageError(f"reading migrations: unexpected file name {path.name!r}")
        found.append(Migration(int(match.group(1)), path.stem, path.read_text(encoding="utf-8")))
    numbers = [m.number for m in found]
    if numbers != list(range(1, len(found) + 1)):
        raise StorageError(f"reading migrations: numbers must run 1..n, found {numbers}")
    return found


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
    migrations = load_migrations(directory)
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    applied = await _applied(db)
    unknown = applied - {m.name for m in migrations}
    if unknown:
        raise SchemaMismatchError(
            f"the database was upgraded by a newer memstrata (unknown migrations: "
            f"{', '.join(sorted(unknown))}); upgrade memstrata to open it"
        )
    done: list[str] = []
    for migration in migrations:
        if migration.name in applied:
            continue
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
    return done


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
    names = await _applied(db)
    return max((int(n[:4]) for n in names), default=0)
