"""SQLite as a `copy-store` source or target (see memory_core.services.copy_store)."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.ports.transfer import CopyRow
from memory_core.storage.records import RowWriter, recorded_model
from memory_core.storage.sqlite.keyword_tables import indexed_write
from memory_core.storage.sqlite.rows import encode_time, row_to_memory
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.vectors import EXACT_SEARCH_MAX, SqliteVectorIndex

__all__ = ["SqliteCopyEndpoint"]

_WRITE = RowWriter(encode_time)


class SqliteCopyEndpoint:
    """Reads and writes whole rows with their ids and vectors."""

    def __init__(self, session: SqliteSession, *, exact_max: int = EXACT_SEARCH_MAX) -> None:
        self._session = session
        # The store's own threshold: a project copied past it is listed as coarse for good.
        self._vectors = SqliteVectorIndex(session, exact_max=exact_max)

    async def model(self) -> tuple[str, int] | None:
        """The recorded embedding model."""
        async with self._session.read("reading the model"):
            rows = await self._session.fetch(
                "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dims')"
            )
        return recorded_model(rows)

    async def counts(self) -> tuple[int, int]:
        """(memories, embeddings)."""
        async with self._session.read("counting"):
            rows = await self._session.fetch(
                "SELECT (SELECT count(*) FROM context_snapshots),"
                " (SELECT count(*) FROM context_embeddings)"
            )
        return int(rows[0][0]), int(rows[0][1])

    async def read(self, after_id: int, limit: int) -> list[CopyRow]:
        """A batch of rows in id order, with their vectors."""
        import numpy as np

        async with self._session.read("reading rows to copy"):
            rows = await self._session.fetch(
                "SELECT s.*, e.text_hash AS text_hash, e.embedding AS embedding"
                " FROM context_snapshots AS s LEFT JOIN context_embeddings AS e ON e.id = s.id"
                " WHERE s.id > ? ORDER BY s.id LIMIT ?",
                (after_id, limit),
            )
        return [
            (
                row_to_memory(r),
                r["text_hash"],
                None if r["embedding"] is None else np.frombuffer(r["embedding"], np.float32),
            )
            for r in rows
        ]

    async def prepare(self, model: tuple[str, int] | None) -> None:
        """Record the source's model (refused if another is recorded)."""
        if model is not None:
            await self._vectors.ensure_model(*model)

    async def write(self, rows: Sequence[CopyRow]) -> None:
        """Insert a batch keeping ids (AUTOINCREMENT follows them), then its vectors."""
        async with indexed_write(self._session, "copying rows") as db:
            await db.executemany(
                "INSERT INTO context_snapshots (id, project, layer, key, content, metadata,"
                " session_id, created_at, updated_at, last_accessed, access_count, memory_tier,"
                " content_hash, token_count, author, occurred_at, dates, norm_hash, pinned,"
                " superseded_by, tags)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_WRITE.memory(m) for m, _, _ in rows],
            )
        await self._vectors.put_vectors([(m, h, v) for m, h, v in rows if h and v is not None])

    async def finish(self) -> None:
        """Nothing to do: AUTOINCREMENT already continues above the largest id inserted."""
