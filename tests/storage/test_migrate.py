from pathlib import Path

import pytest

from memory_core.errors import SchemaMismatchError, StorageError
from memory_core.storage.migrations import load_migrations, migrations_dir
from memory_core.storage.sqlite import apply_migrations, open_database, schema_version
from memory_core.storage.sqlite.migrate import default_migrations_dir


async def test_migrations_apply_once_and_rerun_is_a_noop(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "m.db")
    try:
        assert await schema_version(db) == 0
        names = [m.name for m in load_migrations(default_migrations_dir())]
        assert names[:4] == [
            "0001_initial",
            "0002_embeddings",
            "0003_conversations",
            "0004_business_memory",
        ]
        assert await apply_migrations(db) == names
        assert await apply_migrations(db) == []
        assert await schema_version(db) == len(load_migrations(default_migrations_dir()))
        async with db.execute("pragma journal_mode") as cur:
            row = await cur.fetchone()
        assert row is not None and row[0] == "wal"
        async with db.execute("pragma index_list('context_snapshots')") as cur:
            indexes = {r[1] for r in await cur.fetchall()}
        assert {"idx_memory_tier", "idx_last_accessed"} <= indexes
    finally:
        await db.close()


async def test_two_connections_racing_to_migrate_both_succeed(tmp_path: Path) -> None:
    import asyncio

    a, b = await open_database(tmp_path / "r.db"), await open_database(tmp_path / "r.db")
    try:
        results = await asyncio.gather(apply_migrations(a), apply_migrations(b))
        assert sorted(name for names in results for name in names) == [
            m.name for m in load_migrations(default_migrations_dir())
        ]
    finally:
        await a.close()
        await b.close()


async def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    folder = tmp_path / "sql"
    folder.mkdir()
    (folder / "0001_ok.sql").write_text("CREATE TABLE a (x);")
    (folder / "0002_broken.sql").write_text("CREATE TABLE b (x); INSERT INTO nope VALUES (1);")
    db = await open_database(tmp_path / "f.db")
    try:
        with pytest.raises(StorageError, match="0002_broken"):
            await apply_migrations(db, folder)
        async with db.execute("select name from sqlite_master where name = 'b'") as cur:
            assert await cur.fetchone() is None  # table b rolled back with its migration
        assert await schema_version(db) == 1
        assert not db.in_transaction
    finally:
        await db.close()


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "n.db")
    try:
        await apply_migrations(db)
        await db.execute("insert into schema_migrations values ('0099_future', 'x')")
        with pytest.raises(SchemaMismatchError, match="newer memstrata"):
            await apply_migrations(db)
    finally:
        await db.close()


def test_migration_files_are_numbered_uniquely_and_the_shipped_ones_contiguously(
    tmp_path: Path,
) -> None:
    # Stores record migrations by name, so a gap loads; the shipped set must still run 1..n.
    for backend in ("sqlite", "postgres"):
        numbers = [m.number for m in load_migrations(migrations_dir(backend))]
        assert numbers == list(range(1, len(numbers) + 1)), backend
    (tmp_path / "0002_gap.sql").write_text("")
    assert [m.number for m in load_migrations(tmp_path)] == [2]
    (tmp_path / "0002_twin.sql").write_text("")
    with pytest.raises(StorageError, match="must be unique"):
        load_migrations(tmp_path)
    (tmp_path / "bad name.sql").write_text("")
    with pytest.raises(StorageError, match="unexpected file name"):
        load_migrations(tmp_path)
