"""One FTS5 keyword table per project, so no project's BM25 depends on another's rows.

FTS5 computes BM25 from the statistics of the table it reads (row count, average length, rows
holding each word). With one table for every project, a project's keyword order, the rows that
made the candidate cap and the large-store switch (a count of matches) all moved when another
project gained rows: a channel between projects (issue 19). Migration 0011 registers each
project in `context_snapshots_fts_projects`; its table is `context_snapshots_fts_<id>` (the
name never holds the project's name) with four triggers on context_snapshots that keep it in
step, so every write path (append, update, delete, prune, import, copy-store, the sqlite3
shell) is indexed by SQL, not by code routing.

Trigger: each of those triggers is evaluated for every written row, so a write costs one
`WHEN` test per project (docs/benchmarks.md: ~1.7 us each). Why not route in code: a write
path that forgot would leave the contentless index out of step for good. The `WHEN` compares
the project with a quoted literal (`_literal`): a subquery by id cost 1.8x as much.

A table is built (created, given its triggers, filled from context_snapshots) in the writing
transaction that first needs it, and marked `ready`. Tables are never dropped, so a `ready`
seen outside a transaction stays true and is cached per connection.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import aiosqlite

from memory_core.storage.sqlite.session import SqliteSession

__all__ = [
    "build_pending_keyword_tables",
    "ensure_keyword_tables",
    "keyword_table",
    "table_name",
]

_REGISTRY = "context_snapshots_fts_projects"

# Projects whose table was seen ready outside a transaction, per connection (one file each).
_READY: weakref.WeakKeyDictionary[aiosqlite.Connection, dict[str, str]] = (
    weakref.WeakKeyDictionary()
)


def table_name(table_id: int) -> str:
    """The keyword table of the project registered as `table_id`."""
    return f"context_snapshots_fts_{int(table_id)}"


def _literal(text: str) -> str:
    """`text` as an SQL string literal (a trigger's WHEN cannot take a bound parameter)."""
    if "\x00" in text:
        raise ValueError("a project name cannot hold NUL")
    return "'" + text.replace("'", "''") + "'"


def _build_sql(table_id: int, project: str) -> list[str]:
    """The table, its ranking, and the triggers that keep it in step with the project's rows.

    The same columns, tokenizer, prefixes and weights as the former shared table (0007, 0010);
    a row leaves the index BEFORE it changes, while the view still shows its indexed text.
    """
    fts = table_name(table_id)
    name = _literal(project)
    insert = (
        f"INSERT INTO {fts} (rowid, content, key, metadata)"
        " SELECT id, content, key, metadata FROM context_snapshots_search WHERE id = new.id;"
    )
    remove = (
        f"INSERT INTO {fts} ({fts}, rowid, content, key, metadata)"
        " SELECT 'delete', id, content, key, metadata FROM context_snapshots_search"
        " WHERE id = old.id;"
    )
    # Only text changes (and a move to another project) touch the index: access tracking
    # updates rows constantly and must stay cheap.
    text_columns = "content, key, metadata, dates, project"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5(content, key, metadata, content = '',"
        " tokenize = 'porter unicode61 remove_diacritics 2', prefix = '2 3 4')",
        # A metadata match counts half as much as one in the content or the key.
        f"INSERT INTO {fts} ({fts}, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.5)')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON context_snapshots"
        f" WHEN new.project = {name} BEGIN {insert} END",
        f"CREATE TRIGGER {fts}_bd BEFORE DELETE ON context_snapshots"
        f" WHEN old.project = {name} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_bu BEFORE UPDATE OF {text_columns} ON context_snapshots"
        f" WHEN old.project = {name} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {text_columns} ON context_snapshots"
        f" WHEN new.project = {name} BEGIN {insert} END",
    ]


async def _build(db: aiosqlite.Connection, table_id: int, project: str) -> None:
    """Create, index and mark ready one registered project's table (inside a transaction)."""
    for statement in _build_sql(table_id, project):
        await db.execute(statement)
    fts = table_name(table_id)
    await db.execute(
        f"INSERT INTO {fts} (rowid, content, key, metadata)"
        " SELECT id, content, key, metadata FROM context_snapshots_search"
        " WHERE project = ? ORDER BY id",
        (project,),
    )
    await db.execute(f"UPDATE {_REGISTRY} SET ready = 1 WHERE id = ?", (table_id,))


async def ensure_keyword_tables(db: aiosqlite.Connection, projects: Iterable[str]) -> None:
    """Build the keyword tables `projects` lack (inside a write transaction).

    Call it in the transaction that writes the projects' rows, before it does: then the triggers
    index the rows as they are written. One indexed lookup per project not already seen ready (a
    rolled-back transaction may undo a build, so what is built here is not cached).
    """
    known = _READY.get(db, {})
    wanted = sorted({p for p in projects if p not in known})
    for project in wanted:
        rows = list(
            await db.execute_fetchall(
                f"SELECT id, ready FROM {_REGISTRY} WHERE project = ?", (project,)
            )
        )
        if rows and rows[0][1]:
            continue
        if rows:
            table_id = int(rows[0][0])
        else:
            cur = await db.execute(f"INSERT INTO {_REGISTRY} (project) VALUES (?)", (project,))
            assert cur.lastrowid is not None
            table_id = int(cur.lastrowid)
        await _build(db, table_id, project)


async def build_pending_keyword_tables(db: aiosqlite.Connection) -> int:
    """Build every registered table that is not ready; returns how many were built.

    After migration 0011, or rows written by another tool; one IMMEDIATE transaction. A store that
    predates 0011 (no registry) has nothing to build.
    """
    async with db.execute(
        f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{_REGISTRY}'"
    ) as cur:
        if await cur.fetchone() is None:
            return 0
    async with db.execute(f"SELECT 1 FROM {_REGISTRY} WHERE ready = 0 LIMIT 1") as cur:
        if await cur.fetchone() is None:
            return 0
    await db.execute("BEGIN IMMEDIATE")
    try:
        pending = list(
            await db.execute_fetchall(f"SELECT id, project FROM {_REGISTRY} WHERE ready = 0")
        )
        for table_id, project in pending:
            await _build(db, int(table_id), str(project))
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    return len(pending)


async def keyword_table(session: SqliteSession, project: str) -> str | None:
    """The project's keyword table, built first if it is not ready; None if it has no rows.

    Call outside any transaction of `session` (it may take the write lock to build).
    """
    known = _READY.setdefault(session.db, {})
    if project in known:
        return known[project]
    async with session.read("finding the keyword index"):
        rows = await session.fetch(
            f"SELECT id, ready FROM {_REGISTRY} WHERE project = ?", (project,)
        )
    if not rows:
        return None  # never written: no row to match
    if not rows[0][1]:
        async with session.write("building the keyword index") as db:
            await ensure_keyword_tables(db, [project])
    name = table_name(int(rows[0][0]))
    known[project] = name
    return name
