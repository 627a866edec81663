"""SQLite keeps one FTS5 table per project (migration 0011): nothing another project does, by
any write path, changes a project's keyword order, BM25 values or match counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery, TierCutoffs
from memory_core.storage.migrations import load_migrations
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    apply_migrations,
    open_database,
)
from memory_core.storage.sqlite.copy import SqliteCopyEndpoint
from memory_core.storage.sqlite.migrate import default_migrations_dir
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ("deploy", "billing", "service", "outage")
QUERIES = [("deploy",), ("billing", "outage"), WORDS]


def draft(text: str, project: str, layer: Layer = Layer.EPISODIC, **kw: Any) -> MemoryDraft:
    return MemoryDraft(
        project=project,
        layer=layer,
        content=text,
        content_hash=content_hash(text),
        token_count=len(text.split()),
        **kw,
    )


def a_rows() -> list[MemoryDraft]:
    return [
        draft("Deploy the billing service on Fridays only", "alpha"),
        draft("The billing outage came from an expired certificate", "alpha"),
        draft("Service owners approve every deploy", "alpha"),
        draft("billing", "alpha"),
        draft("deploy deploy deploy the service", "alpha"),
        draft("outage review: the mesh dropped billing requests", "alpha"),
        draft("rule: deploy only with a ticket", "alpha", Layer.PROCEDURAL, key="deploy rule"),
    ]


def b_rows(n: int, project: str = "beta", start: int = 0) -> list[MemoryDraft]:
    out = []
    for i in range(start, start + n):
        words = list(WORDS[: 1 + i % 4]) * (1 + i % 3)
        out.append(draft(f"{' '.join(words)} {'filler ' * (i % 7)} number {i}", project))
    return out


async def table_of(db: aiosqlite.Connection, project: str) -> str:
    rows = await db.execute_fetchall(
        "SELECT id FROM context_snapshots_fts_projects WHERE project = ? AND ready = 1", (project,)
    )
    return f"context_snapshots_fts_{int(next(iter(rows))[0])}"


async def queued(db: aiosqlite.Connection) -> int:
    """Changes the triggers queued that no write path moved into a table before committing."""
    rows = await db.execute_fetchall("SELECT count(*) FROM context_snapshots_fts_queue")
    return int(next(iter(rows))[0])


async def view_of(repo: SqliteMemoryRepository, db: aiosqlite.Connection) -> dict[str, Any]:
    """Everything alpha's keyword search shows or decides by: ids in order with their BM25,
    the key lookups, and the match counts behind the large-store switch and the prefix probe."""
    out: dict[str, Any] = {}
    table = await table_of(db, "alpha")
    for words in QUERIES:
        for prefix in (0, 3):
            query = TextQuery(project="alpha", words=words, prefix_min_chars=prefix, limit=5)
            out[f"{words}/{prefix}"] = [
                (m.memory.id, m.bm25) for m in await repo.search_text(query)
            ]
        fts = " OR ".join(f'"{w}"' for w in words)
        async with repo._session.read("test"):
            out[f"{words}/count"] = await repo._count_matches(table, fts, 10_000)
            counts = await repo._word_counts(table, list(words), 2)
            out[f"{words}/common"] = {w for w, n in counts.items() if n >= 2}
    keys = await repo.search_keys("alpha", Layer.PROCEDURAL, '"deploy"', limit=5)
    out["keys"] = [m.id for m in keys]
    return out


async def test_another_projects_writes_deletes_prunes_imports_and_copies_change_nothing(
    db: aiosqlite.Connection, tmp_path: Path
) -> None:
    session = SqliteSession(db)
    repo = SqliteMemoryRepository(session)
    for d in a_rows():
        await repo.add(d, T0)
    before = await view_of(repo, db)
    assert before["('deploy',)/0"] and before["keys"]

    # Appends (one by one and in batches), updates of keyed rows, and deletes.
    stored = [(await repo.add(d, T0)).memory for d in b_rows(40)]
    await repo.add_many(b_rows(200, start=40), T0)
    await repo.add(draft("deploy billing", "beta", Layer.PROCEDURAL, key="deploy rule"), T0)
    await repo.add(draft("deploy outage", "beta", Layer.PROCEDURAL, key="deploy rule"), T0)
    assert await queued(db) == 0
    assert await view_of(repo, db) == before
    await repo.delete("beta", [m.id for m in stored[:20]])
    await repo.replace_with("beta", [m.id for m in stored[20:30]], b_rows(5, start=900), T0)
    assert await queued(db) == 0
    assert await view_of(repo, db) == before

    # Prune: beta's rows expire (alpha's were used later, so they stay).
    later = T0 + timedelta(days=400)
    for d in a_rows():
        await repo.add(d, later)  # restating refreshes alpha's reference time
    before = await view_of(repo, db)
    cutoffs = TierCutoffs(
        now=later,
        active_after=later - timedelta(days=1),
        recent_after=later - timedelta(days=7),
        archived_after=later - timedelta(days=30),
    )
    pruned = await repo.prune_expired(cutoffs, "beta", limit=50, dry_run=False)
    assert len(pruned.ids) == 50
    assert await queued(db) == 0
    assert await view_of(repo, db) == before
    listed = await repo.prune_expired(cutoffs, "beta", limit=30, dry_run=True)
    assert len(await repo.delete_expired(listed.ids, cutoffs)) == 30
    for i in range(6):
        await repo.add(draft(f"deploy {i}", "beta", Layer.WORKING, session_id="s"), later)
    assert await repo.trim_session("beta", Layer.WORKING, "s", keep=2) == 4
    assert await queued(db) == 0
    assert await view_of(repo, db) == before
    await repo.delete_layer("beta", None)
    assert await queued(db) == 0
    assert await view_of(repo, db) == before

    # Import (new project, rows keeping no ids) and copy-store (rows with their ids).
    transfer = SqliteMemoryTransfer(session, tmp_path / "x.db", gap_s=0)
    imported: list[dict[str, Any]] = [
        {
            "project": "gamma",
            "layer": "episodic",
            "key": None,
            "content": f"deploy billing service outage {i}",
            "metadata": {},
            "session_id": None,
            "created_at": T0,
            "updated_at": T0,
            "last_accessed": None,
            "access_count": 0,
            "memory_tier": "ACTIVE",
            "content_hash": f"h{i}",
            "token_count": 5,
            "author": None,
            "occurred_at": None,
            "dates": None,
            "norm_hash": None,
            "pinned": False,
            "superseded_by": None,
            "tags": [],
        }
        for i in range(100)
    ]
    await transfer.insert_rows("memory", imported, keep_ids=False)
    copied = [
        (m.model_copy(update={"id": 100_000 + i, "project": "delta"}), None, None)
        for i, m in enumerate(stored[30:])
    ]
    await SqliteCopyEndpoint(session).write(copied)
    assert await queued(db) == 0
    assert await view_of(repo, db) == before

    # And the other projects are searchable in their own tables.
    for project, n in (("gamma", 100), ("delta", len(copied))):
        query = TextQuery(project=project, words=("deploy", "billing"), limit=500)
        assert len(await repo.search_text(query)) == n
        rows = await db.execute_fetchall(f"SELECT count(*) FROM {await table_of(db, project)}")
        assert next(iter(rows))[0] == n


async def test_a_project_name_with_quotes_and_unicode_keeps_its_own_index(
    db: aiosqlite.Connection,
) -> None:
    """Names are bound values, never SQL text: a name that looks like SQL is still a name, and
    a name differing by a quote is another project."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    names = ['it\'s "ours" 项目 ünï', "it''s", "x' OR 1=1 --", "x"]
    ids = {}
    for n, name in enumerate(names):
        ids[name] = [
            (await repo.add(draft(f"tea note {i} of project {n}", name), T0)).memory.id
            for i in range(n + 1)
        ]
    for name in names:
        query = TextQuery(project=name, words=("tea",), limit=10)
        assert sorted(m.memory.id for m in await repo.search_text(query)) == ids[name]
        rows = await db.execute_fetchall(f"SELECT count(*) FROM {await table_of(db, name)}")
        assert next(iter(rows))[0] == len(ids[name])
    # A delete leaves the other tables alone and empties its own.
    await repo.delete(names[0], ids[names[0]])
    assert await repo.search_text(TextQuery(project=names[0], words=("tea",), limit=10)) == []
    for name in names[1:]:
        query = TextQuery(project=name, words=("tea",), limit=10)
        assert sorted(m.memory.id for m in await repo.search_text(query)) == ids[name]


async def test_rows_written_around_the_code_are_indexed_before_they_are_searched(
    db: aiosqlite.Connection,
) -> None:
    """A row written by another tool (the sqlite3 shell) is queued by the triggers and indexed
    before its project is searched; a row moved to another project moves index."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    kept = (await repo.add(draft("tea for alpha", "alpha"), T0)).memory
    await db.execute(
        "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
        " updated_at, access_count, memory_tier, content_hash, token_count)"
        " VALUES ('shell', 'episodic', 'tea from the shell', '{}', '2026-01-01T00:00:00.000000Z',"
        " '2026-01-01T00:00:00.000000Z', 0, 'ACTIVE', 'h', 4)"
    )
    await db.commit()
    assert await queued(db) == 1  # the shell's row waits for the next search (or open)
    query = TextQuery(project="shell", words=("tea",), limit=5)
    assert [m.memory.content for m in await repo.search_text(query)] == ["tea from the shell"]
    await db.execute("UPDATE context_snapshots SET project = 'shell' WHERE id = ?", (kept.id,))
    await db.execute("UPDATE context_snapshots SET project = 'new' WHERE content LIKE 'tea from%'")
    await db.commit()
    assert [m.memory.id for m in await repo.search_text(query)] == [kept.id]
    assert await repo.search_text(TextQuery(project="alpha", words=("tea",), limit=5)) == []
    moved = TextQuery(project="new", words=("tea",), limit=5)
    assert [m.memory.content for m in await repo.search_text(moved)] == ["tea from the shell"]


async def _store_at(path: Path, tmp_path: Path, before: int) -> aiosqlite.Connection:
    folder = tmp_path / f"sql-{before}"
    folder.mkdir()
    for migration in load_migrations(default_migrations_dir()):
        if migration.number < before:
            (folder / f"{migration.name}.sql").write_text(migration.sql, encoding="utf-8")
    db = await open_database(path)
    await apply_migrations(db, folder)
    return db


async def test_migration_0011_moves_every_project_to_its_own_table(tmp_path: Path) -> None:
    """Rows of several projects stored under 0010's shared index: after 0011 each project's
    rows are in its table alone, with their text, dates and metadata searchable, and its
    BM25 is that of a store holding only that project."""
    db = await _store_at(tmp_path / "old.db", tmp_path, before=11)
    contents: dict[str, list[str]] = {"alpha": [], "beta": [], "g'amma": []}
    for n, project in enumerate(contents):
        for i in range(5 + 20 * n):
            text = f"{'deploy ' * (1 + i % 3)}billing note {i} of {n}"
            contents[project].append(text)
            await db.execute(
                "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
                " updated_at, access_count, memory_tier, content_hash, token_count, dates)"
                " VALUES (?, 'episodic', ?, '{\"system\": \"Jira\"}',"
                " '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 0, 'ACTIVE',"
                " ?, 4, '2023-05-07')",
                (project, text, f"h{n}-{i}"),
            )
    await db.commit()
    stored = list(await db.execute_fetchall("SELECT * FROM context_snapshots ORDER BY id"))
    try:
        assert (await apply_migrations(db))[0] == "0011_project_keyword_tables"
        # The same rows, in the columns they had (later migrations add columns).
        columns = len(stored[0])
        assert [
            tuple(r)[:columns]
            for r in await db.execute_fetchall("SELECT * FROM context_snapshots ORDER BY id")
        ] == [tuple(r) for r in stored]
        shared = await db.execute_fetchall(
            "SELECT 1 FROM sqlite_master WHERE name = 'context_snapshots_fts'"
        )
        assert list(shared) == []
        repo = SqliteMemoryRepository(SqliteSession(db))
        migrated: dict[str, list[tuple[int, float]]] = {}
        for project, texts in contents.items():
            for words in (("deploy", "billing"), ("jira",), ("may", "2023")):
                query = TextQuery(project=project, words=words, limit=100)
                hits = await repo.search_text(query)
                assert sorted(m.memory.content for m in hits) == sorted(texts), words
            query = TextQuery(project=project, words=("deploy",), limit=100)
            migrated[project] = [(m.memory.id, m.bm25) for m in await repo.search_text(query)]
        # The same BM25 as a fresh store holding only that project's rows.
        fresh_db = await open_database(tmp_path / "fresh.db")
        try:
            await apply_migrations(fresh_db)
            fresh = SqliteMemoryRepository(SqliteSession(fresh_db))
            for project in contents:
                for row in stored:
                    if row["project"] == project:
                        await fresh_db.execute(
                            "INSERT INTO context_snapshots (id, project, layer, key, content,"
                            " metadata, session_id, created_at, updated_at, last_accessed,"
                            " access_count, memory_tier, content_hash, token_count, author,"
                            " occurred_at, dates) SELECT * FROM ("
                            "SELECT ? AS id, ? AS project, ? AS layer, ? AS key, ? AS content,"
                            " ? AS metadata, ? AS session_id, ? AS created_at, ? AS updated_at,"
                            " ? AS last_accessed, ? AS access_count, ? AS memory_tier,"
                            " ? AS content_hash, ? AS token_count, ? AS author,"
                            " ? AS occurred_at, ? AS dates)",
                            tuple(row)[:17],
                        )
                await fresh_db.commit()
                query = TextQuery(project=project, words=("deploy",), limit=100)
                alone = [(m.memory.id, m.bm25) for m in await fresh.search_text(query)]
                assert alone == migrated[project]
        finally:
            await fresh_db.close()
    finally:
        await db.close()


async def test_a_crash_after_0011_builds_the_tables_at_the_next_open(tmp_path: Path) -> None:
    """0011 registers the projects; a process killed before their tables were built leaves
    `ready = 0`, and the next open builds them."""
    db = await _store_at(tmp_path / "old.db", tmp_path, before=11)
    await db.execute(
        "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
        " updated_at, access_count, memory_tier, content_hash, token_count)"
        " VALUES ('p', 'episodic', 'tea', '{}', '2026-01-01T00:00:00.000000Z',"
        " '2026-01-01T00:00:00.000000Z', 0, 'ACTIVE', 'h', 1)"
    )
    await db.commit()
    only_0011 = tmp_path / "only"
    only_0011.mkdir()
    for migration in load_migrations(default_migrations_dir()):
        if migration.number <= 11:
            (only_0011 / f"{migration.name}.sql").write_text(migration.sql, encoding="utf-8")
    # The SQL of 0011 alone, as a process that died right after it would leave the file.
    (sql,) = [m.sql for m in load_migrations(default_migrations_dir()) if m.number == 11]
    await db.executescript(
        f"BEGIN; {sql}; INSERT INTO schema_migrations VALUES ('0011_project_keyword_tables',"
        " '2026-01-01T00:00:00Z'); COMMIT;"
    )
    rows = await db.execute_fetchall("SELECT project, ready FROM context_snapshots_fts_projects")
    assert [tuple(r) for r in rows] == [("p", 0)]
    await db.close()
    db = await open_database(tmp_path / "old.db")
    try:
        assert await apply_migrations(db, only_0011) == []
        rows = await db.execute_fetchall("SELECT ready FROM context_snapshots_fts_projects")
        assert [tuple(r) for r in rows] == [(1,)]
        await apply_migrations(db)  # today's repository reads the columns of later migrations
        repo = SqliteMemoryRepository(SqliteSession(db))
        hits = await repo.search_text(TextQuery(project="p", words=("tea",), limit=5))
        assert [m.memory.content for m in hits] == ["tea"]
    finally:
        await db.close()


async def test_rows_written_after_a_crash_after_0011_are_indexed_once(tmp_path: Path) -> None:
    """A row written from the shell between the crash and the next open is both in the rows
    the table is built from and in the queue: the open indexes it once, so the project's BM25
    is that of a store that indexed the same rows the normal way."""
    insert = (
        "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
        " updated_at, access_count, memory_tier, content_hash, token_count)"
        " VALUES ('p', 'episodic', ?, '{}', '2026-01-01T00:00:00.000000Z',"
        " '2026-01-01T00:00:00.000000Z', 0, 'ACTIVE', ?, 1)"
    )
    texts = ["tea at noon", "tea and cake", "coffee at nine"]
    db = await _store_at(tmp_path / "old.db", tmp_path, before=11)
    await db.execute(insert, (texts[0], "h0"))
    await db.commit()
    (sql,) = [m.sql for m in load_migrations(default_migrations_dir()) if m.number == 11]
    await db.executescript(
        f"BEGIN; {sql}; INSERT INTO schema_migrations VALUES ('0011_project_keyword_tables',"
        " '2026-01-01T00:00:00Z'); COMMIT;"
    )
    for n, text in enumerate(texts[1:], start=1):  # the shell, while the table is not built
        await db.execute(insert, (text, f"h{n}"))
    await db.commit()
    await db.close()

    async def bm25(path: Path) -> list[tuple[str, float]]:
        conn = await open_database(path)
        try:
            await apply_migrations(conn)
            repo = SqliteMemoryRepository(SqliteSession(conn))
            hits = await repo.search_text(TextQuery(project="p", words=("tea",), limit=5))
            return [(m.memory.content, m.bm25) for m in hits]
        finally:
            await conn.close()

    fresh = await open_database(tmp_path / "fresh.db")
    try:
        await apply_migrations(fresh)
        for n, text in enumerate(texts):
            await fresh.execute(insert, (text, f"h{n}"))
        await fresh.commit()
    finally:
        await fresh.close()
    recovered, normal = await bm25(tmp_path / "old.db"), await bm25(tmp_path / "fresh.db")
    assert [content for content, _ in recovered] == ["tea and cake", "tea at noon"]
    assert recovered == normal
