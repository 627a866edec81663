"""Open PostgreSQL: migrate on one connection, then a pool speaking jsonb and pgvector."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from memory_core.errors import StorageError
from memory_core.storage.postgres.migrate import apply_migrations

__all__ = ["DRIVER_ERRORS", "PostgresStore", "is_postgres_url", "open_store"]

# What a failing server, network or statement raises; wrapped in StorageError at the adapters.
DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
)

POOL_MIN = 1


def is_postgres_url(url: str | None) -> bool:
    """Whether a database URL names PostgreSQL (postgresql:// or postgres://)."""
    return bool(url) and str(url).split("://", 1)[0] in ("postgresql", "postgres")


async def _init_connection(conn: Any) -> None:
    # metadata is jsonb holding a JSON object: hand the domain a dict, not a string.
    await conn.set_type_codec(
        "jsonb",
        encoder=lambda value: json.dumps(value, ensure_ascii=False),
        decoder=json.loads,
        schema="pg_catalog",
    )
    await register_vector(conn)


class PostgresStore:
    """A connection pool on one migrated database."""

    def __init__(self, pool: Any, migrations_applied: list[str]) -> None:
        self.pool = pool
        self.migrations_applied = migrations_applied

    async def close(self) -> None:
        """Close every connection of the pool."""
        await self.pool.close()


async def open_store(url: str, *, pool_max: int = 10) -> PostgresStore:
    """Connect, apply pending migrations (under an advisory lock) and open a pool.

    Args:
        url: A postgresql:// URL (libpq form: user, password, host, port, database, ?host=).
        pool_max: Most connections this process holds.

    Raises:
        StorageError: The server is unreachable, refuses the login, or a migration failed.
        SchemaMismatchError: The database was migrated by a newer memstrata.
    """
    try:
        conn = await asyncpg.connect(url)
    except DRIVER_ERRORS as exc:
        raise StorageError(f"connecting to PostgreSQL ({type(exc).__name__})") from exc
    try:
        applied = await apply_migrations(conn)
    finally:
        await conn.close()
    try:
        pool = await asyncpg.create_pool(
            url, min_size=POOL_MIN, max_size=max(pool_max, POOL_MIN), init=_init_connection
        )
    except DRIVER_ERRORS as exc:
        raise StorageError(f"opening the PostgreSQL pool ({type(exc).__name__})") from exc
    return PostgresStore(pool, applied)
