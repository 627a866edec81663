"""PostgreSQL as a `copy-store` source or target (see memory_core.services.copy_store)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.ports.transfer import CopyRow
from memory_core.storage.postgres.rows import COLUMNS, aware, row_to_memory
from memory_core.storage.postgres.session import PostgresSession, maintenance_lock
from memory_core.storage.postgres.vectors import PostgresVectorIndex
from memory_core.storage.records import RowWriter, recorded_model

__all__ = ["PostgresCopyEndpoint"]

_WRITE = RowWriter(aware, metadata=lambda value: value)  # jsonb takes the dict


class PostgresCopyEndpoint:
    """Reads and writes whole rows with their ids and vectors."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session
        self._vectors = PostgresVectorIndex(session)

    async def model(self) -> tuple[str, int] | None:
        """The recorded embedding model."""
        async with self._session.read("reading the model") as conn:
            rows = await conn.fetch(
                "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dims')"
            )
        return recorded_model(rows)

    async def counts(self) -> tuple[int, int]:
        """(memories, embeddings)."""
        async with self._session.read("counting") as conn:
            row = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM context_snapshots),"
                " (SELECT count(*) FROM context_embeddings)"
            )
        return int(row[0]), int(row[1])

    async def read(self, after_id: int, limit: int) -> list[CopyRow]:
        """A batch of rows in id order, with their vectors."""
        cols = ", ".join(f"s.{c.strip()}" for c in COLUMNS.split(","))
        async with self._session.read("reading rows to copy") as conn:
            rows = await conn.fetch(
                f"SELECT {cols}, e.text_hash, e.embedding FROM context_snapshots AS s"
                " LEFT JOIN context_embeddings AS e ON e.id = s.id"
                " WHERE s.id > $1 ORDER BY s.id LIMIT $2",
                after_id,
                limit,
            )
        out: list[CopyRow] = []
        for r in rows:
            vector = r["embedding"]
            if vector is not None:
                array = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
                vector = np.asarray(array, dtype=np.float32)
            out.append((row_to_memory(r), r["text_hash"], vector))
        return out

    async def prepare(self, model: tuple[str, int] | None) -> None:
        """Record the source's model (refused if another is recorded)."""
        if model is not None:
            await self._vectors.ensure_model(*model)

    async def write(self, rows: Sequence[CopyRow]) -> None:
        """Insert a batch keeping ids, then its vectors."""
        async with self._session.write("copying rows") as conn:
            await maintenance_lock(conn, shared=True)
            await conn.executemany(
                f"INSERT INTO context_snapshots ({COLUMNS})"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,"
                " $17, $18, $19, $20, $21)",
                [_WRITE.memory(m) for m, _, _ in rows],
            )
        await self._vectors.put_vectors([(m, h, v) for m, h, v in rows if h and v is not None])

    async def finish(self) -> None:
        """Move the id sequence past the copied ids."""
        async with self._session.write("advancing ids") as conn:
            await conn.execute(
                "SELECT setval(pg_get_serial_sequence('context_snapshots', 'id'),"
                " greatest((SELECT max(id) FROM context_snapshots), 1))"
            )
