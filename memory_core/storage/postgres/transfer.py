"""PostgresMemoryTransfer: whole rows of every store out (export) and in (import)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import TABLES, BackupReport, Progress, Row, TableSpec, table
from memory_core.storage import transfer_rows
from memory_core.storage.postgres.migrate import schema_version
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession, maintenance_lock
from memory_core.storage.transfer_rows import TABLE, count_query, import_columns, page_query

__all__ = ["PostgresMemoryTransfer"]


def _mark(n: int) -> str:
    return f"${n}"


def _placeholders(count: int) -> str:
    return ", ".join(_mark(n) for n in range(1, count + 1))


def _insert_sql(spec: TableSpec, *, keep_ids: bool) -> str:
    names = import_columns(spec, keep_ids=keep_ids)
    into = (
        f"INSERT INTO {TABLE[spec.kind]} ({', '.join(names)}) VALUES ({_placeholders(len(names))})"
    )
    if spec.kind == "document_revision":
        # Raised above both values: a replica caching the tenant's vectors sees a new revision.
        return (
            f"{into} ON CONFLICT (tenant) DO UPDATE SET revision ="
            " greatest(knowledge_revisions.revision, excluded.revision) + 1 RETURNING 1"
        )
    return f"{into} ON CONFLICT DO NOTHING RETURNING {'id' if spec.renumbered else '1'}"


def _sync_sequence(kind: str) -> str:
    # Rows written with their ids leave the identity behind: the next default would collide.
    name = TABLE[kind]
    return (
        f"SELECT setval(pg_get_serial_sequence('{name}', 'id'),"
        f" coalesce((SELECT max(id) FROM {name}), 0) + 1, false)"
    )


class PostgresMemoryTransfer:
    """The MemoryTransfer port on a PostgreSQL database."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def schema_version(self) -> int:
        """Number of the newest applied migration."""
        async with self._session.read("reading the schema version") as conn:
            return await schema_version(conn)

    async def count_rows(self, kind: str, project: str | None) -> int:
        """Rows of a kind in one project, or in the store."""
        sql, params = count_query(kind, project, _mark)
        async with self._session.read(f"counting {kind} rows") as conn:
            return int(await conn.fetchval(sql, *params))

    async def export_rows(
        self, kind: str, project: str | None, *, after: tuple[Any, ...] | None, limit: int
    ) -> list[Row]:
        """Keyset page in key order (text keys compare byte-wise, as in SQLite)."""
        spec = table(kind)
        types = dict(spec.columns)
        # COLLATE "C": byte order, as SQLite's, whatever the database's locale; so both
        # backends page (and export) rows in the same order.
        sql, params = page_query(
            kind,
            project,
            after,
            limit,
            mark=_mark,
            key=lambda name: f'{name} COLLATE "C"' if types[name] == "text" else name,
        )
        async with self._session.read(f"exporting {kind} rows") as conn:
            rows = await conn.fetch(sql, *params)
        return [
            {
                name: aware(r[name]) if type_ == "time" and r[name] is not None else r[name]
                for name, type_ in spec.columns
            }
            for r in rows
        ]

    async def insert_rows(self, kind: str, rows: Sequence[Row], *, keep_ids: bool) -> list[Any]:
        """One transaction per call (a batch)."""
        spec = table(kind)
        sql = _insert_sql(spec, keep_ids=keep_ids)
        columns = import_columns(spec, keep_ids=keep_ids)
        out: list[Any] = []
        async with self._session.write(f"importing {kind} rows") as conn:
            if kind == "memory":
                # Row by row, each firing the counter trigger: ordered against maintenance
                # like every other write of memories (see the repository's maintenance_lock).
                await maintenance_lock(conn, shared=True)
            if not keep_ids and spec.renumbered:
                await conn.execute(_sync_sequence(kind))
            stored = transfer_rows.version_stored(_mark) if kind == "memory_version" else None
            for row in rows:
                if stored is not None and await conn.fetchval(
                    stored, row["memory_id"], row["valid_from"], row["content_hash"], row["change"]
                ):
                    out.append(None)  # this version of its memory is stored already
                    continue
                got = await conn.fetchval(sql, *(row[n] for n in columns))
                out.append(got)
        return out

    async def finish_import(self) -> None:
        """Move every id sequence past the ids written."""
        async with self._session.write("advancing ids") as conn:
            for spec in TABLES:
                if spec.renumbered:
                    await conn.execute(_sync_sequence(spec.kind))

    async def memory_ids(self, rows: Sequence[Row]) -> list[int | None]:
        """The stored memory with each row's identity (transfer_rows.memory_identity)."""
        out: list[int | None] = []
        async with self._session.read("finding stored memories") as conn:
            for row in rows:
                sql, params = transfer_rows.memory_identity(row, _mark)
                found = await conn.fetchval(sql, *params)
                out.append(None if found is None else int(found))
        return out

    async def relink_superseded(self, links: Sequence[tuple[int, int | None]]) -> None:
        """One transaction setting each memory's superseded_by."""
        if not links:
            return
        async with self._session.write("linking superseded memories") as conn:
            await maintenance_lock(conn, shared=True)  # a write of memories, as any other
            await conn.executemany(
                transfer_rows.relink_statement(_mark), [(by, ident) for ident, by in links]
            )

    async def backup(self, target: Path, *, progress: Progress | None = None) -> BackupReport:
        """Not this command's job on PostgreSQL: the server's own tools copy it consistently."""
        raise InvalidInputError("backup", "on PostgreSQL use pg_dump (see docs/postgres.md)")
