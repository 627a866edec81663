"""Migration 0013 on a store with memories: their normalised identities are filled in, so a
later copy differing in case or end mark is found (both backends)."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft
from memory_core.storage.migrations import load_migrations
from memory_core.storage.postgres import PostgresMemoryRepository, PostgresSession
from memory_core.storage.postgres import migrate as pg_migrate
from memory_core.storage.postgres.connection import open_store
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, open_database
from memory_core.storage.sqlite import migrate as sqlite_migrate
from tests.fakes import START

_OLD = [("p", "Use pnpm, not npm."), ("p", "use PNPM, not npm"), ("q", "Use pnpm, not npm.")]
_INSERT = (
    "INSERT INTO context_snapshots (project, layer, content, metadata, created_at, updated_at,"
    " access_count, memory_tier, content_hash, token_count) VALUES ({marks})"
)


def _folder(tmp_path: Path, backend: str, before: int) -> Path:
    folder = tmp_path / f"{backend}-before-{before}"
    folder.mkdir()
    source = (
        sqlite_migrate.default_migrations_dir()
        if backend == "sqlite"
        else pg_migrate.default_migrations_dir()
    )
    for migration in load_migrations(source):
        if migration.number < before:
            (folder / f"{migration.name}.sql").write_text(migration.sql, encoding="utf-8")
    return folder


def _draft(project: str, text: str) -> MemoryDraft:
    return MemoryDraft(
        project=project,
        layer=Layer.EPISODIC,
        content=text,
        content_hash=content_hash(text),
        token_count=4,
    )


async def test_sqlite_rows_from_before_0013_get_their_identity(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "old.db")
    try:
        await sqlite_migrate.apply_migrations(db, _folder(tmp_path, "sqlite", 13))
        for project, text in _OLD:
            await db.execute(
                _INSERT.format(marks="?, 'episodic', ?, '{}', ?, ?, 0, 'ACTIVE', ?, 4"),
                (
                    project,
                    text,
                    "2026-01-01T00:00:00.000000Z",
                    "2026-01-01T00:00:00.000000Z",
                    content_hash(text),
                ),
            )
        await db.commit()
        applied = await sqlite_migrate.apply_migrations(db)
        assert applied[0] == "0013_memory_truth"  # then the later ones
        rows = await db.execute_fetchall(
            "SELECT project, norm_hash IS NOT NULL FROM context_snapshots ORDER BY id"
        )
        # The second old row normalises like the first: it keeps NULL, the first the identity.
        assert [tuple(r) for r in rows] == [("p", 1), ("p", 0), ("q", 1)]
        repo = SqliteMemoryRepository(SqliteSession(db))
        again = await repo.add(_draft("p", "USE PNPM, NOT NPM!"), START)
        assert (again.status, again.memory.id) == ("duplicate", 1)
    finally:
        await db.close()


async def test_postgres_rows_from_before_0013_get_their_identity(
    tmp_path: Path, pg_url: str
) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        # The test database comes migrated (a template): start it over, empty.
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        await pg_migrate.apply_migrations(conn, _folder(tmp_path, "postgres", 13))
        for project, text in _OLD:
            await conn.execute(
                _INSERT.format(marks="$1, 'episodic', $2, '{}', now(), now(), 0, 'ACTIVE', $3, 4"),
                project,
                text,
                content_hash(text),
            )
        applied = await pg_migrate.apply_migrations(conn)
        assert applied[0] == "0013_memory_truth"  # then the later ones
        rows = await conn.fetch(
            "SELECT project, norm_hash IS NOT NULL AS has FROM context_snapshots ORDER BY id"
        )
        assert [(r["project"], r["has"]) for r in rows] == [("p", True), ("p", False), ("q", True)]
    finally:
        await conn.close()
    store = await open_store(pg_url)
    try:
        repo = PostgresMemoryRepository(PostgresSession(store.pool))
        again = await repo.add(_draft("p", "USE PNPM, NOT NPM!"), START)
        assert again.status == "duplicate"
    finally:
        await store.close()
