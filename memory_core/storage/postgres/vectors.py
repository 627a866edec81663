"""PostgresVectorIndex: the VectorIndex port on pgvector (an HNSW cosine index)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memory_core.domain.models import Layer, Memory, VectorMatch
from memory_core.ports.embeddings import Vector
from memory_core.storage.postgres.rows import COLUMNS
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.records import model_recorded

__all__ = ["EXACT_SEARCH_MAX", "PostgresVectorIndex"]

# Projects up to this many rows are searched exactly (a scan of the project's vectors, ordered
# by distance); larger ones through the HNSW index. HNSW filters by project *after* the graph
# walk, so the walk is widened (ef_search) to keep enough candidates of the project.
EXACT_SEARCH_MAX = 20_000
EF_FACTOR = 20
EF_MIN = 200
EF_MAX = 1000  # pgvector's upper bound for hnsw.ef_search
_COUNT_TTL_S = 30.0
_MODEL_LOCK = "memstrata:embedding-model"


def _vector(value: Any) -> Vector:
    # pgvector's codec decodes to its own Vector class (0.5+) or to a numpy array (older).
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32).copy()


class PostgresVectorIndex:
    """Vectors in `context_embeddings.embedding` (vector(dims)), found by cosine distance.

    The column's size and its HNSW index depend on the model's dimensions, so they are set
    here when the model is first recorded (as SQLite creates its vec0 tables in code).
    """

    def __init__(self, session: PostgresSession, *, exact_max: int = EXACT_SEARCH_MAX) -> None:
        self._session = session
        self._exact_max = exact_max
        self._counts: dict[str, tuple[float, int]] = {}

    @staticmethod
    async def _meta(conn: Any) -> dict[str, str]:
        rows = await conn.fetch("SELECT key, value FROM meta")
        return {str(r[0]): str(r[1]) for r in rows}

    async def ensure_model(self, model_id: str, dims: int) -> None:
        """Record the model on first use; refuse a store written by another model."""
        async with self._session.write("checking the embedding model") as conn:
            # Replicas starting at once: one records the model, the others then see it.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", _MODEL_LOCK)
            meta = await self._meta(conn)
            if not model_recorded(meta, model_id, dims):
                await self._shape(conn, model_id, dims)

    async def reset_model(self, model_id: str, dims: int) -> None:
        """Drop every vector and record a new model."""
        async with self._session.write("resetting the vector index") as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", _MODEL_LOCK)
            await conn.execute("DELETE FROM context_embeddings")
            await self._shape(conn, model_id, dims)
        self._counts.clear()

    @staticmethod
    async def _shape(conn: Any, model_id: str, dims: int) -> None:
        """Size the column for `dims`, (re)build the HNSW index and record the model."""
        await conn.execute("DROP INDEX IF EXISTS idx_embeddings_hnsw")
        # dims is an int from the settings model; it cannot carry SQL.
        await conn.execute(
            f"ALTER TABLE context_embeddings ALTER COLUMN embedding TYPE vector({int(dims)})"
        )
        await conn.execute(
            "CREATE INDEX idx_embeddings_hnsw ON context_embeddings"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        await conn.executemany(
            "INSERT INTO meta (key, value) VALUES ($1, $2)"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [("embedding_model", model_id), ("embedding_dims", str(dims))],
        )

    async def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors for these content hashes."""
        if not hashes:
            return {}
        async with self._session.read("reading vectors") as conn:
            rows = await conn.fetch(
                "SELECT DISTINCT ON (text_hash) text_hash, embedding FROM context_embeddings"
                " WHERE text_hash = ANY($1::text[]) ORDER BY text_hash, id",
                sorted(set(hashes)),
            )
        return {str(r[0]): _vector(r[1]) for r in rows}

    async def put_vectors(self, items: Sequence[tuple[Memory, str, Vector]]) -> None:
        """Store vectors of rows whose text is still the text that was embedded.

        Trigger: a row deleted or rewritten while its old text was being embedded. Why: the
        vector would leave the row searchable under words it no longer holds. Outcome: such
        items are skipped; the rows checked are share-locked until commit, so a rewrite that
        lands meanwhile waits and then drops the vector through the 0002 trigger.
        """
        latest = {m.id: (m, h, v) for m, h, v in items}
        if not latest:
            return
        async with self._session.write("storing vectors") as conn:
            current = {
                int(r[0]): (str(r[1]), r[2])
                for r in await conn.fetch(
                    "SELECT id, content_hash, key FROM context_snapshots"
                    " WHERE id = ANY($1::bigint[]) ORDER BY id FOR SHARE",
                    sorted(latest),
                )
            }
            rows = [
                (m.id, h, np.asarray(v, dtype=np.float32))
                for m, h, v in latest.values()
                if current.get(m.id) == (m.content_hash, m.key)
            ]
            await conn.executemany(
                "INSERT INTO context_embeddings (id, text_hash, embedding) VALUES ($1, $2, $3)"
                " ON CONFLICT (id) DO UPDATE"
                " SET text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding",
                rows,
            )
        for m, _, _ in latest.values():
            self._counts.pop(m.project, None)

    async def _project_size(self, conn: Any, project: str) -> int:
        cached = self._counts.get(project)
        if cached is not None and time.monotonic() - cached[0] < _COUNT_TTL_S:
            return cached[1]
        size = int(
            await conn.fetchval(
                "SELECT count(*) FROM context_snapshots WHERE project = $1", project
            )
        )
        self._counts[project] = (time.monotonic(), size)
        return size

    async def search_vectors(
        self, project: str, vector: Vector, *, layer: Layer | None, limit: int
    ) -> list[VectorMatch]:
        """Nearest rows of one project: exact for small projects, HNSW for large ones."""
        args: list[Any] = [np.asarray(vector, dtype=np.float32), project, limit]
        layer_filter = ""
        if layer is not None:
            args.append(layer.value)
            layer_filter = " AND s.layer = $4"
        async with self._session.write("vector search") as conn:
            if await self._project_size(conn, project) <= self._exact_max:
                # Ordering by (distance, id) is not an order the HNSW index can produce, so
                # the planner scans the project's vectors exactly.
                rows = await conn.fetch(
                    "SELECT e.id, e.embedding <=> $1 AS distance FROM context_embeddings AS e"
                    " JOIN context_snapshots AS s ON s.id = e.id"
                    f" WHERE s.project = $2{layer_filter} ORDER BY distance, e.id LIMIT $3",
                    *args,
                )
            else:
                ef = min(max(limit * EF_FACTOR, EF_MIN), EF_MAX)
                await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                rows = await conn.fetch(
                    "SELECT e.id, e.embedding <=> $1 AS distance FROM context_embeddings AS e"
                    " JOIN context_snapshots AS s ON s.id = e.id"
                    f" WHERE s.project = $2{layer_filter} ORDER BY e.embedding <=> $1 LIMIT $3",
                    *args,
                )
        return [VectorMatch(id=int(r[0]), distance=float(r[1])) for r in rows]

    async def missing_vectors(self, *, limit: int) -> list[Memory]:
        """Rows without a vector, oldest first."""
        cols = ", ".join(f"s.{c.strip()}" for c in COLUMNS.split(","))
        async with self._session.read("finding rows to embed") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {cols} FROM context_snapshots AS s"
                " WHERE NOT EXISTS (SELECT 1 FROM context_embeddings AS e WHERE e.id = s.id)"
                " ORDER BY s.id LIMIT $1",
                limit,
            )

    async def vector_stats(self) -> tuple[int, int]:
        """(rows with a vector, rows without one)."""
        async with self._session.read("counting vectors") as conn:
            row = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM context_embeddings),"
                " (SELECT count(*) FROM context_snapshots)"
            )
        indexed, total = int(row[0]), int(row[1])
        return indexed, total - indexed
