"""SqliteMemoryTransfer: whole rows out (export), in (import), and online backups of the file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import sqlean
import sqlite_vec

from memory_core.domain.models import Memory
from memory_core.errors import StorageError
from memory_core.files import partial_beside
from memory_core.ports.transfer import BackupReport, ImportCounts, Progress
from memory_core.storage.sqlite.connection import DriverError
from memory_core.storage.sqlite.migrate import schema_version
from memory_core.storage.sqlite.rows import encode_time
from memory_core.storage.sqlite.session import SqliteSession

__all__ = ["SqliteMemoryTransfer"]

_COLUMNS = (
    "project, layer, key, content, metadata, session_id, created_at, updated_at, last_accessed,"
    " access_count, memory_tier, content_hash, token_count"
)
_VALUES = (
    ":project, :layer, :key, :content, :metadata, :session_id, :created_at, :updated_at,"
    " :last_accessed, :access_count, :memory_tier, :content_hash, :token_count"
)
# Without a conflict target, DO NOTHING covers every uniqueness rule at once: the id, a key
# per (project, layer) and unkeyed content per (project, layer[, session]); RETURNING then
# says whether the row went in.
_INSERT_WITH_ID = (
    f"INSERT INTO context_snapshots (id, {_COLUMNS}) VALUES (:id, {_VALUES})"
    " ON CONFLICT DO NOTHING RETURNING id"
)
_INSERT_NEW_ID = (
    f"INSERT INTO context_snapshots ({_COLUMNS}) VALUES ({_VALUES})"
    " ON CONFLICT DO NOTHING RETURNING id"
)
_PROGRESS_EVERY = 500


def _params(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "project": m.project,
        "layer": m.layer.value,
        "key": m.key,
        "content": m.content,
        "metadata": json.dumps(m.metadata, ensure_ascii=False),
        "session_id": m.session_id,
        "created_at": encode_time(m.created_at),
        "updated_at": encode_time(m.updated_at),
        "last_accessed": encode_time(m.last_accessed) if m.last_accessed else None,
        "access_count": m.access_count,
        "memory_tier": m.tier.value,
        "content_hash": m.content_hash,
        "token_count": m.token_count,
    }


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


class SqliteMemoryTransfer:
    """The MemoryTransfer port on the SQLite file behind `session`."""

    def __init__(self, session: SqliteSession, path: Path) -> None:
        self._session = session
        self._path = path

    async def schema_version(self) -> int:
        """Number of the newest applied migration."""
        async with self._session.read("reading the schema version") as db:
            return await schema_version(db)

    async def count(self, project: str | None) -> int:
        """Rows of one project, or of the store."""
        where, params = ("WHERE project = ?", [project]) if project is not None else ("", [])
        async with self._session.read("counting memories"):
            rows = await self._session.fetch(
                f"SELECT count(*) FROM context_snapshots {where}", params
            )
        return int(rows[0][0])

    async def export_page(self, project: str | None, *, after_id: int, limit: int) -> list[Memory]:
        """Keyset page by id, so each page is one short read while a server keeps writing."""
        scope = " AND project = ?" if project is not None else ""
        params: list[Any] = [after_id, *([project] if project is not None else []), limit]
        async with self._session.read("exporting memories"):
            return await self._session.fetch_memories(
                f"SELECT * FROM context_snapshots WHERE id > ?{scope} ORDER BY id LIMIT ?", params
            )

    async def import_memories(
        self, memories: Sequence[Memory], *, progress: Progress | None = None
    ) -> ImportCounts:
        """Insert rows with their ids (new ids where taken), skipping stored identities."""
        imported = skipped = renumbered = 0
        deferred: list[dict[str, Any]] = []
        total = len(memories)
        async with self._session.write("importing memories"):
            # First every row that can keep its id; only then the rest get new ids, so a
            # renumbered row never takes an id that a later row of the file needs.
            for n, memory in enumerate(memories, start=1):
                params = _params(memory)
                if await self._session.fetch(_INSERT_WITH_ID, params):
                    imported += 1
                else:
                    deferred.append(params)
                if progress is not None and n % _PROGRESS_EVERY == 0:
                    await progress(n - len(deferred), total)
            for params in deferred:
                if await self._id_taken(params["id"]) and await self._session.fetch(
                    _INSERT_NEW_ID, params
                ):
                    # The identity is new, only the id was taken (a store with rows of its own).
                    imported += 1
                    renumbered += 1
                else:
                    skipped += 1
            if progress is not None:
                await progress(total, total)
        return ImportCounts(imported=imported, skipped=skipped, renumbered=renumbered)

    async def _id_taken(self, memory_id: int) -> bool:
        rows = await self._session.fetch(
            "SELECT 1 FROM context_snapshots WHERE id = ?", (memory_id,)
        )
        return bool(rows)

    async def backup(self, target: Path, *, progress: Progress | None = None) -> BackupReport:
        """Copy the store with SQLite's online backup API (safe while a server writes)."""
        try:
            report = await anyio.to_thread.run_sync(_backup_file, self._path, target)
        except DriverError as exc:
            raise StorageError("backing up the database") from exc
        if progress is not None:
            await progress(1, 1)
        return report
