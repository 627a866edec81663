"""SqliteMemoryTransfer: whole rows of every store out (export), in (import), and online backups."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import sqlean
import sqlite_vec

from memory_core.errors import StorageError
from memory_core.files import partial_beside
from memory_core.ports.transfer import BackupReport, ColumnType, Progress, Row, TableSpec, table
from memory_core.storage import transfer_rows
from memory_core.storage.sqlite.connection import DriverError
from memory_core.storage.sqlite.keyword_tables import indexed_write
from memory_core.storage.sqlite.migrate import schema_version
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.transfer_rows import TABLE, count_query, import_columns, page_query

__all__ = ["SqliteMemoryTransfer"]


def _mark(n: int) -> str:
    return "?"


def _decode(kind: ColumnType, value: Any) -> Any:
    if value is None:
        return None
    if kind == "time":
        return decode_time(value)
    if kind == "bool":
        return bool(value)
    if kind == "json":
        return json.loads(value)
    if kind == "bytes":
        return bytes(value)
    return value


def _encode(kind: ColumnType, value: Any) -> Any:
    if value is None:
        return None
    if kind == "time":
        return encode_time(value)
    if kind == "bool":
        return int(value)
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    return value


def _insert_sql(spec: TableSpec, *, keep_ids: bool) -> str:
    names = import_columns(spec, keep_ids=keep_ids)
    marks = ", ".join("?" * len(names))
    into = f"INSERT INTO {TABLE[spec.kind]} ({', '.join(names)}) VALUES ({marks})"
    if spec.kind == "document_revision":
        # Raised above both values: a server caching the tenant's vectors sees a new revision.
        return (
            f"{into} ON CONFLICT (tenant) DO UPDATE"
            " SET revision = max(revision, excluded.revision) + 1 RETURNING 1"
        )
    # Without a conflict target, DO NOTHING covers every uniqueness rule at once (the id, a
    # key per project and layer, a text per session, ...); RETURNING says whether it went in.
    return f"{into} ON CONFLICT DO NOTHING RETURNING {'id' if spec.renumbered else '1'}"


def _backup_file(source: Path, target: Path) -> BackupReport:
    """Online backup (sqlite3_backup) into a temporary file, verified, then moved into place."""
    with partial_beside(target) as (fd, partial):
        os.close(fd)  # SQLite opens the (empty, private) file by name
        src = sqlean.connect(str(source))
        dst = sqlean.connect(str(partial))
        try:
            # One step (pages=-1) copies a consistent snapshot: in WAL mode that read
            # transaction does not block writers, whereas a copy in several steps restarts
            # whenever another connection writes, and may never finish on a busy server.
            src.backup(dst, pages=-1)
            dst.enable_load_extension(True)
            sqlite_vec.load(dst)  # the copy holds vec0 tables; checking them needs the module
            dst.enable_load_extension(False)
            rows = dst.execute("PRAGMA integrity_check").fetchall()
        finally:
            dst.close()
            src.close()
        integrity = "; ".join(str(r[0]) for r in rows)
        if integrity != "ok":
            partial.unlink()
            return BackupReport(path=target, bytes=0, integrity=integrity)
        os.replace(partial, target)
    return BackupReport(path=target, bytes=target.stat().st_size, integrity="ok")


# Pause after each import batch, outside the write lock. Another process waiting for the lock
# does not queue: SQLite's busy handler polls, every 100 ms once it has waited ~0.3 s, so an
# importer that begins its next batch at once almost always wins the lock again and starves
# it (bench/import_lock.py: appends waited 1.4 s behind 250 ms batches with no pause). A
# pause as long as that poll lets every waiting writer in between two batches.
WRITER_GAP_S = 0.1


class SqliteMemoryTransfer:
    """The MemoryTransfer port on the SQLite file behind `session`."""

    def __init__(self, session: SqliteSession, path: Path, *, gap_s: float = WRITER_GAP_S) -> None:
        self._session = session
        self._path = path
        self._gap_s = gap_s

    async def schema_version(self) -> int:
        """Number of the newest applied migration."""
        async with self._session.read("reading the schema version") as db:
            return await schema_version(db)

    async def count_rows(self, kind: str, project: str | None) -> int:
        """Rows of a kind in one project, or in the store."""
        sql, params = count_query(kind, project, _mark)
        async with self._session.read(f"counting {kind} rows"):
            rows = await self._session.fetch(sql, params)
        return int(rows[0][0])

    async def export_rows(
        self, kind: str, project: str | None, *, after: tuple[Any, ...] | None, limit: int
    ) -> list[Row]:
        """Keyset page in key order, so each page is one short read while a server writes."""
        spec = table(kind)
        sql, params = page_query(kind, project, after, limit, mark=_mark)
        async with self._session.read(f"exporting {kind} rows"):
            rows = await self._session.fetch(sql, params)
        return [
            {name: _decode(type_, r[i]) for i, (name, type_) in enumerate(spec.columns)}
            for r in rows
        ]

    async def insert_rows(self, kind: str, rows: Sequence[Row], *, keep_ids: bool) -> list[Any]:
        """One IMMEDIATE transaction: the write lock is held for this batch only.

        Then a pause of `gap_s` outside the lock, so other processes' writes get in.
        """
        spec = table(kind)
        sql = _insert_sql(spec, keep_ids=keep_ids)
        columns = [(n, t) for n, t in spec.columns if keep_ids or n != "id"]
        out: list[Any] = []
        stored = transfer_rows.version_stored(_mark) if kind == "memory_version" else None
        async with indexed_write(self._session, f"importing {kind} rows"):
            for row in rows:
                if stored is not None and await self._session.fetch(
                    stored,
                    [
                        row["memory_id"],
                        encode_time(row["valid_from"]),
                        row["content_hash"],
                        row["change"],
                    ],
                ):
                    out.append(None)  # this version of its memory is stored already
                    continue
                got = await self._session.fetch(sql, [_encode(t, row[n]) for n, t in columns])
                out.append(got[0][0] if got else None)
        if self._gap_s:
            await anyio.sleep(self._gap_s)
        return out

    async def finish_import(self) -> None:
        """Nothing to do: SQLite gives new rows ids above the largest stored."""

    async def memory_ids(self, rows: Sequence[Row]) -> list[int | None]:
        """The stored memory with each row's identity (transfer_rows.memory_identity)."""
        out: list[int | None] = []
        async with self._session.read("finding stored memories"):
            for row in rows:
                sql, params = transfer_rows.memory_identity(row, _mark)
                found = await self._session.fetch(sql, params)
                out.append(int(found[0][0]) if found else None)
        return out

    async def relink_superseded(self, links: Sequence[tuple[int, int | None]]) -> None:
        """One transaction setting each memory's superseded_by."""
        if not links:
            return
        async with self._session.write("linking superseded memories") as db:
            await db.executemany(
                transfer_rows.relink_statement(_mark), [(by, ident) for ident, by in links]
            )

    async def backup(self, target: Path, *, progress: Progress | None = None) -> BackupReport:
        """Copy the store with SQLite's online backup API (safe while a server writes)."""
        try:
            report = await anyio.to_thread.run_sync(_backup_file, self._path, target)
        except DriverError as exc:
            raise StorageError("backing up the database") from exc
        if progress is not None:
            await progress(1, 1)
        return report
