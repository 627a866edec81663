"""One FTS5 keyword table per project, so no project's BM25 depends on another's rows.

FTS5 computes BM25 from the statistics of the table it reads (row count, average length, rows
holding each word). With one table for every project, a project's keyword order, the rows that
made the candidate cap and the large-store switch (a count of matches) all moved when another
project gained rows: a channel between projects (issue 19). Since migration 0011 each project
has its own contentless table, `context_snapshots_fts_<id>`, `<id>` being its row in
`context_snapshots_fts_projects` (a table name never holds a project name).

Trigger: SQL cannot name a table from a value, and one trigger per project (`WHEN project =
...`) made every write pay for every project in the store (+12 ms a row at 1,000 projects,
docs/benchmarks.md) and every connection parse them all. Why: the change must still be
captured by SQL, whatever writes (a forgotten code path would leave a contentless index out of
step for good). Outcome: four triggers, whatever the number of projects, queue each change
with its indexed text in `context_snapshots_fts_queue`, in the writing transaction;
`apply_keyword_queue` moves the queue into the projects' tables. Every write path of this code
calls it before its transaction commits, so the queue is empty between transactions; search
applies anything still queued (rows written by another tool) before it reads, and so does the
migration runner at open. A project's table is made, and filled from its rows, when the queue
first names it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite

from memory_core.storage.sqlite.session import SqliteSession

__all__ = [
    "TOKENIZE",
    "apply_keyword_queue",
    "build_pending_keyword_tables",
    "indexed_write",
    "keyword_table",
    "table_id",
    "table_name",
]

# Every project's table tokenizes this way; keyword_postings tokenizes with it too, so its
# terms are the table's.
TOKENIZE = "porter unicode61 remove_diacritics 2"

_REGISTRY = "context_snapshots_fts_projects"
_QUEUE = "context_snapshots_fts_queue"


def table_name(table_id: int) -> str:
    """The keyword table of the project registered as `table_id`."""
    return f"context_snapshots_fts_{int(table_id)}"


def table_id(table: str) -> int:
    """The registry id of the keyword table named `table` (the inverse of `table_name`)."""
    return int(table.rsplit("_", 1)[1])


async def _build(db: aiosqlite.Connection, table_id: int, project: str) -> None:
    """Create one registered project's table, index its rows, mark it ready (in a transaction).

    The same columns, tokenizer, prefixes and weights as the former shared table (0007, 0010).
    """
    fts = table_name(table_id)
    await db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(content, key, metadata,"
        f" content = '', tokenize = '{TOKENIZE}', prefix = '2 3 4')"
    )
    # A metadata match counts half as much as one in the content or the key.
    await db.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.5)')")
    await db.execute(
        f"INSERT INTO {fts} (rowid, content, key, metadata)"
        " SELECT id, content, key, metadata FROM context_snapshots_search"
        " WHERE project = ? ORDER BY id",
        (project,),
    )
    await db.execute(f"UPDATE {_REGISTRY} SET ready = 1 WHERE id = ?", (table_id,))


async def apply_keyword_queue(db: aiosqlite.Connection) -> int:
    """Move every queued change into its project's table; call inside a write transaction.

    A project the queue names for the first time is registered and its table built from its
    rows (which already hold the queued changes); a ready one gets the changes in order (a
    removal carries the text the row was indexed with, as a contentless table needs). One
    statement when nothing is queued. Returns how many tables it built.
    """
    named = list(
        await db.execute_fetchall(
            f"SELECT q.project, p.id, p.ready FROM (SELECT DISTINCT project FROM {_QUEUE}) AS q"
            f" LEFT JOIN {_REGISTRY} AS p ON p.project = q.project"
        )
    )
    if not named:
        return 0
    built = 0
    for project, table_id, ready in named:
        if table_id is None:
            cur = await db.execute(f"INSERT INTO {_REGISTRY} (project) VALUES (?)", (project,))
            assert cur.lastrowid is not None
            table_id = cur.lastrowid
        if not ready:
            await _build(db, int(table_id), str(project))
            built += 1
            continue
        fts = table_name(int(table_id))
        await db.execute(
            f"INSERT INTO {fts} ({fts}, rowid, content, key, metadata)"
            " SELECT CASE WHEN remove THEN 'delete' END, row_id, content, key, metadata"
            f" FROM {_QUEUE} WHERE project = ? ORDER BY seq",
            (project,),
        )
        # A removal, or a row entering that also left (a rewrite, or a move from another
        # project, which keeps its lower id), is a change that new ids do not reveal.
        await db.execute(
            f"UPDATE {_REGISTRY} SET edits = edits + 1 WHERE id = ? AND EXISTS (SELECT 1"
            f" FROM {_QUEUE} WHERE project = ? AND (remove OR row_id IN"
            f" (SELECT row_id FROM {_QUEUE} WHERE remove)))",
            (table_id, project),
        )
    await db.execute(f"DELETE FROM {_QUEUE}")
    return built


async def _catch_up(db: aiosqlite.Connection, project: str | None = None) -> int:
    """Apply the queue, then build the registered tables not ready yet (all, or `project`'s).

    The queue goes first: a table is built from the rows, which already hold every queued
    change, so applying the queue after a build would index those changes a second time (and
    skew that project's BM25). Call inside a write transaction. Returns how many tables it
    built.
    """
    built = await apply_keyword_queue(db)
    pending = f"SELECT id, project FROM {_REGISTRY} WHERE ready = 0"
    params: tuple[str, ...] = ()
    if project is not None:
        pending, params = pending + " AND project = ?", (project,)
    for table_id, name in list(await db.execute_fetchall(pending, params)):
        await _build(db, int(table_id), str(name))
        built += 1
    return built


@asynccontextmanager
async def indexed_write(
    session: SqliteSession, operation: str
) -> AsyncIterator[aiosqlite.Connection]:
    """`session.write` for statements that write memories: the queue is applied before COMMIT."""
    async with session.write(operation) as db:
        yield db
        await apply_keyword_queue(db)


async def build_pending_keyword_tables(db: aiosqlite.Connection) -> int:
    """Apply the queue and build every registered table not ready yet; one transaction.

    Runs at every open of a store at 0011 or later (after the migrations): after 0011 it
    builds every project's table; a crash in between leaves them registered, built at the next
    open. Returns how many tables it built. One statement when there is nothing to do.
    """
    probe = (
        f"SELECT EXISTS (SELECT 1 FROM {_REGISTRY} WHERE ready = 0)"
        f" OR EXISTS (SELECT 1 FROM {_QUEUE})"
    )
    async with db.execute(probe) as cur:
        row = await cur.fetchone()
        if row is None or not row[0]:
            return 0
    await db.execute("BEGIN IMMEDIATE")
    try:
        built = await _catch_up(db)
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    return built


async def keyword_table(session: SqliteSession, project: str) -> str | None:
    """The project's keyword table, with every queued change in it; None if it has no rows.

    One statement; a write transaction too when something is queued or the project's table is
    not built yet (rows written by another tool, a crash after 0011). Call it outside any
    transaction of `session`.
    """
    lookup = (
        f"SELECT p.id, p.ready, EXISTS (SELECT 1 FROM {_QUEUE})"
        f" FROM (SELECT 1) LEFT JOIN {_REGISTRY} AS p ON p.project = ?"
    )
    async with session.read("finding the keyword index"):
        table_id, ready, queued = (await session.fetch(lookup, (project,)))[0]
    if queued or (table_id is not None and not ready):
        async with session.write("updating the keyword index") as db:
            await _catch_up(db, project)
            rows = await session.fetch(f"SELECT id FROM {_REGISTRY} WHERE project = ?", (project,))
        table_id = rows[0][0] if rows else None
    return None if table_id is None else table_name(int(table_id))
