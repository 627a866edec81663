"""A database made by every earlier schema version upgrades to head with all its rows intact.

Generic over the migrations that exist: for each k, apply migrations 1..k (the files
themselves make the fixture), write rows into every table of that version, upgrade to head
and compare every row, column by column, with what was written.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from memory_core.domain.models import Layer
from memory_core.storage.migrations import load_migrations
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    apply_migrations,
    open_database,
)
from memory_core.storage.sqlite.migrate import default_migrations_dir

MIGRATIONS = load_migrations(default_migrations_dir())
ROWS_PER_TABLE = 3
STAMP = "2026-01-01T00:00:00.000000Z"


async def _tables(db: aiosqlite.Connection) -> dict[str, str]:
    """Ordinary tables (no virtual tables, their shadow tables or bookkeeping) and their SQL."""
    async with db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'") as cur:
        rows = {str(r[0]): str(r[1] or "") for r in await cur.fetchall()}
    virtual = [n for n, sql in rows.items() if sql.upper().startswith("CREATE VIRTUAL")]
    return {
        name: sql
        for name, sql in rows.items()
        if name not in virtual
        and not any(name.startswith(f"{v}_") for v in virtual)
        and not name.startswith("sqlite_")
        and name != "schema_migrations"
        # The keyword index's bookkeeping (0011): the registry says which per-project tables
        # exist (a made-up row would claim one never built) and the queue is consumed at
        # open; neither holds data of its own.
        and name not in ("context_snapshots_fts_projects", "context_snapshots_fts_queue")
    }


def _choices(sql: str, column: str) -> list[str] | None:
    match = re.search(rf"\b{column}\b[^,]*?CHECK\s*\(\s*{column}\s+IN\s*\(([^)]*)\)", sql, re.S)
    return re.findall(r"'([^']*)'", match.group(1)) if match else None


def _value(sql: str, column: dict[str, Any], n: int) -> Any:
    name, kind = str(column["name"]), str(column["type"]).upper()
    allowed = _choices(sql, name)
    if allowed:
        return allowed[n % len(allowed)]
    if "INT" in kind:
        return n + 1
    if "REAL" in kind or "FLOA" in kind:
        return n + 0.5
    if "BLOB" in kind:
        return bytes([n]) * 8
    if name.endswith("_at") or name in {"last_accessed", "created", "updated"}:
        return STAMP
    if "metadata" in name or "json" in name or name.endswith("_ids"):
        return "{}" if "metadata" in name else "[]"
    # Same column name, same value in every table: composite foreign keys line up.
    return f"{name} #{n}"


async def _fill(db: aiosqlite.Connection, version: int) -> dict[str, list[dict[str, Any]]]:
    """Rows in every table (retried in passes, so referenced rows come first); what was written."""
    # Memories are written with the columns every version has (today's repository writes
    # columns that later migrations add, such as 0008's author).
    from memory_core.domain.inputs import content_hash

    for n, layer in enumerate((Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL)):
        text = f"written at schema {version}, row {n}"
        await db.execute(
            "INSERT INTO context_snapshots (project, layer, key, content, metadata, session_id,"
            " created_at, updated_at, last_accessed, access_count, memory_tier, content_hash,"
            " token_count) VALUES ('p', ?, ?, ?, ?, NULL, ?, ?, NULL, 0, 'ACTIVE', ?, ?)",
            (
                layer.value,
                None if layer is Layer.EPISODIC else f"key {n}",
                text,
                json.dumps({"v": version, "n": n}),
                STAMP,
                STAMP,
                content_hash(text),
                n + 1,
            ),
        )
        await db.commit()
    tables = await _tables(db)
    pending = {t: ROWS_PER_TABLE for t in tables if t != "context_snapshots"}
    failures: dict[str, str] = {}
    for _ in range(len(tables) + 1):
        for table in sorted(pending):
            async with db.execute(f"PRAGMA table_info({table})") as cur:
                columns = [
                    dict(zip(("cid", "name", "type", "notnull", "dflt", "pk"), r, strict=True))
                    for r in await cur.fetchall()
                ]
            # An INTEGER PRIMARY KEY is the rowid: let SQLite number the rows.
            rowid_pk = [c for c in columns if c["pk"]]
            if not (
                len(rowid_pk) == 1
                and str(rowid_pk[0]["type"]).upper() == "INTEGER"
                and "WITHOUT ROWID" not in tables[table].upper()
            ):
                rowid_pk = []
            cols = [c for c in columns if c not in rowid_pk]
            while pending[table]:
                n = ROWS_PER_TABLE - pending[table]
                values = [_value(tables[table], c, n) for c in cols]
                names = ", ".join(c["name"] for c in cols)
                marks = ", ".join("?" for _ in cols)
                try:
                    await db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", values)
                    await db.commit()
                except Exception as exc:
                    failures[table] = str(exc)
                    break  # a referenced row is missing yet; the next pass retries
                pending[table] -= 1
        pending = {t: left for t, left in pending.items() if left}
    assert not pending, f"could not write rows at schema {version}: {failures}"
    return {table: await _rows(db, table) for table in tables}


async def _rows(
    db: aiosqlite.Connection, table: str, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every row of a table (only `columns`, when given), in a stable order."""
    names = ", ".join(columns) if columns else "*"
    async with db.execute(f"SELECT {names} FROM {table}") as cur:
        rows = [dict(r) for r in await cur.fetchall()]
    return sorted(rows, key=repr)


@pytest.mark.parametrize("version", range(1, len(MIGRATIONS)), ids=lambda v: f"from-{v:04d}")
async def test_a_database_of_an_earlier_version_upgrades_with_rows_intact(
    tmp_path: Path, version: int
):
    folder = tmp_path / "sql"
    folder.mkdir()
    source = default_migrations_dir()
    for migration in MIGRATIONS[:version]:
        shutil.copy(source / f"{migration.name}.sql", folder / f"{migration.name}.sql")
    db = await open_database(tmp_path / f"v{version}.db")
    try:
        assert len(await apply_migrations(db, folder)) == version
        written = await _fill(db, version)
        assert written["context_snapshots"], "the core table must hold rows"

        upgraded = await apply_migrations(db)
        assert upgraded == [m.name for m in MIGRATIONS[version:]]
        async with db.execute("PRAGMA integrity_check") as cur:
            check = await cur.fetchone()
        assert check is not None and check[0] == "ok"
        for table, rows in written.items():
            # Same rows, same values in every column they had (new columns may be added).
            assert await _rows(db, table, list(rows[0])) == rows, table
        # The upgraded store still works through the repository, FTS index included.
        repo = SqliteMemoryRepository(SqliteSession(db))
        assert await repo.get_by_key("p", Layer.SEMANTIC, "key 1") is not None
        from memory_core.domain.fts_query import search_words
        from memory_core.domain.models import TextQuery

        words = search_words(f"written schema {version}")
        hits = await repo.search_text(TextQuery(project="p", words=words, limit=10))
        assert len(hits) == 3
        # The index (rebuilt by 0010) forgets rows written before it when they go.
        assert await repo.delete("p", [h.memory.id for h in hits]) == 3
        assert await repo.search_text(TextQuery(project="p", words=words, limit=10)) == []
    finally:
        await db.close()


def test_there_is_an_earlier_version_to_upgrade_from():
    assert len(MIGRATIONS) >= 2
