"""The export covers every column of every store, on both backends; a new table or column
fails here until it is exported (memory_core.ports.transfer.TABLES) or listed as left out."""

from __future__ import annotations

import aiosqlite

from memory_core.ports.transfer import TABLES, table
from memory_core.services.transfer import _Record
from memory_core.storage.postgres import PostgresStore
from memory_core.storage.transfer_rows import TABLE

# Tables an export leaves out, and why (README, `export`).
LEFT_OUT = {
    "context_embeddings": "memory vectors belong to a model; the importer embeds again",
    "memory_counts": "kept by triggers from the memories themselves",
    "memory_tags": "kept by triggers from the memories' own tags column",
    "hook_sessions": "Claude Code hook bookkeeping, rebuilt by the next session",
    "meta": "the embedding model record and settings of this database",
    "schema_migrations": "the schema, not data",
    "sqlite_sequence": "SQLite's AUTOINCREMENT counters, which follow the ids written",
    "shared_tenants": "opt-in to shared patterns: a moved store shares nothing until asked again",
    "shared_documents": "derived; rebuilt by `memstrata documents refresh-patterns`",
    "shared_passages": "derived; rebuilt by `memstrata documents refresh-patterns`",
    "shared_patterns": "derived; rebuilt by `memstrata documents refresh-patterns`",
    "shared_pattern_holders": "derived; rebuilt by `memstrata documents refresh-patterns`",
}
# Computed by the database from other columns, so never exported (PostgreSQL's full-text
# vectors; date_start, migration 0010).
GENERATED = {"search_vector", "search_text", "date_start"}


def test_the_memory_record_and_its_table_spec_name_the_same_fields() -> None:
    # A column added to memories (say `author`) goes in both, or the export loses it.
    assert set(table("memory").names) == set(_Record.model_fields)
    assert set(TABLE) == {s.kind for s in TABLES}  # one map, used by both backends


async def test_every_sqlite_table_and_column_is_exported_or_left_out_on_purpose(
    db: aiosqlite.Connection,
) -> None:
    names = {
        str(r[0])
        for r in await db.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%_fts%'"
        )
    }
    assert names == set(TABLE.values()) | set(LEFT_OUT)
    for spec in TABLES:
        rows = await db.execute_fetchall(f"PRAGMA table_info({TABLE[spec.kind]})")
        assert {str(r[1]) for r in rows} == set(spec.names), spec.kind


async def test_every_postgres_table_and_column_is_exported_or_left_out_on_purpose(
    pg_store: PostgresStore,
) -> None:
    async with pg_store.pool.acquire() as conn:
        names = {
            r[0]
            for r in await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                " AND table_type = 'BASE TABLE'"
            )
        }
        assert names <= set(TABLE.values()) | set(LEFT_OUT)
        assert set(TABLE.values()) <= names
        for spec in TABLES:
            rows = await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $1",
                TABLE[spec.kind],
            )
            assert {r[0] for r in rows} - GENERATED == set(spec.names), spec.kind
