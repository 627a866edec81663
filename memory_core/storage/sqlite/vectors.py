"""SqliteVectorIndex: the VectorIndex port on sqlite-vec, partitioned by project."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_core.domain.models import Layer, Memory, VectorMatch
from memory_core.errors import SchemaMismatchError
from memory_core.storage.sqlite.session import SqliteSession

__all__ = ["EXACT_SEARCH_MAX", "SqliteVectorIndex"]

Vector = npt.NDArray[np.float32]

# Below this many vectors in a project, exact float32 KNN (vec0) is fast enough (about 4 ms per
# 10k on this machine kind, stack.md §1); above it, a bit-quantised coarse pass over
# COARSE_FACTOR x more candidates plus an exact rescore keeps ~0.97 recall at a fraction of
# the time.
EXACT_SEARCH_MAX = 20_000
COARSE_FACTOR = 20
COARSE_MIN = 200
KNN_MAX = 4096  # sqlite-vec refuses a larger k
_COUNT_TTL_S = 30.0


def _blob(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector(blob: bytes) -> Vector:
    return np.frombuffer(blob, dtype=np.float32).copy()


class SqliteVectorIndex:
    """Vectors in three places, each for one job.

    - `context_embeddings` (plain table): the source of truth, exact rescoring, reuse by hash;
    - `context_vectors` (vec0 float32, partition key `project`): exact KNN for small projects;
    - `context_vectors_bit` (vec0 bit, partition key `project`): the coarse pass for large ones.

    The vec0 tables are sized by the model's dimensions, so they are created here (not by a
    migration) together with the triggers that drop vectors of deleted or rewritten rows.
    """

    def __init__(self, session: SqliteSession, *, exact_max: int = EXACT_SEARCH_MAX) -> None:
        self._session = session
        self._exact_max = exact_max
        self._counts: dict[str, tuple[float, int]] = {}

    async def _meta(self) -> dict[str, str]:
        rows = await self._session.fetch("SELECT key, value FROM meta")
        return {str(r[0]): str(r[1]) for r in rows}

    async def ensure_model(self, model_id: str, dims: int) -> None:
        """Record the model on first use; refuse a store written by another model."""
        async with self._session.write("checking the embedding model") as db:
            meta = await self._meta()
            recorded = meta.get("embedding_model")
            if recorded is not None and (
                recorded != model_id or meta.get("embedding_dims") != str(dims)
            ):
                raise SchemaMismatchError(
                    f"this database was indexed with {recorded} "
                    f"({meta.get('embedding_dims')} dims), not {model_id} ({dims} dims); run "
                    f"`memstrata reindex` to re-embed it with the configured model, or set "
                    f"MEMSTRATA_EMBEDDING_MODEL={recorded}"
                )
            if recorded is None:
                await self._record_model(db, model_id, dims)
            await self._create_tables(db, dims)

    async def reset_model(self, model_id: str, dims: int) -> None:
        """Drop every vector and record a new model."""
        async with self._session.write("resetting the vector index") as db:
            # One statement at a time: executescript would commit the transaction first.
            for statement in (
                "DROP TRIGGER IF EXISTS context_vectors_ad",
                "DROP TRIGGER IF EXISTS context_vectors_au",
                "DROP TABLE IF EXISTS context_vectors",
                "DROP TABLE IF EXISTS context_vectors_bit",
                "DELETE FROM context_embeddings",
            ):
                await db.execute(statement)
            await self._record_model(db, model_id, dims)
            await self._create_tables(db, dims)
        self._counts.clear()

    async def _record_model(self, db: Any, model_id: str, dims: int) -> None:
        await db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("embedding_model", model_id), ("embedding_dims", str(dims))],
        )

    async def _create_tables(self, db: Any, dims: int) -> None:
        for statement in (
            "CREATE VIRTUAL TABLE IF NOT EXISTS context_vectors USING vec0("
            " id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, layer TEXT,"
            f" embedding FLOAT[{dims}] distance_metric=cosine)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS context_vectors_bit USING vec0("
            " id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, layer TEXT,"
            f" embedding BIT[{dims}])",
            "CREATE TRIGGER IF NOT EXISTS context_vectors_ad AFTER DELETE ON context_embeddings"
            " BEGIN DELETE FROM context_vectors WHERE id = old.id;"
            " DELETE FROM context_vectors_bit WHERE id = old.id; END",
            # vec0 partition and metadata columns must follow the row if a backend ever moves
            # rows between layers; today only deletes and rewrites happen.
            "CREATE TRIGGER IF NOT EXISTS context_vectors_au AFTER UPDATE OF layer, project"
            " ON context_snapshots BEGIN DELETE FROM context_embeddings WHERE id = new.id; END",
        ):
            await db.execute(statement)

    async def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors for these content hashes."""
        if not hashes:
            return {}
        unique = sorted(set(hashes))
        marks = ", ".join("?" for _ in unique)
        async with self._session.read("reading vectors"):
            rows = await self._session.fetch(
                "SELECT text_hash, embedding FROM context_embeddings"
                f" WHERE text_hash IN ({marks}) GROUP BY text_hash",
                unique,
            )
        return {str(r[0]): _vector(r[1]) for r in rows}

    async def put_vectors(self, items: Sequence[tuple[Memory, str, Vector]]) -> None:
        """Store vectors of rows whose text is still the text that was embedded.

        Trigger: a row deleted or rewritten while its old text was being embedded (a backfill
        racing an upsert, two upserts in one batch). Why: writing that vector would leave the
        row searchable under words it no longer holds, and nothing would ever re-embed it.
        Outcome: such items are skipped; a rewritten row keeps (or later gets) the vector of
        its current text. The last item wins when one id appears twice.
        """
        latest = {m.id: (m, h, v) for m, h, v in items}
        if not latest:
            return
        async with self._session.write("storing vectors") as db:
            marks = ", ".join("?" for _ in latest)
            current = {
                int(r[0]): (str(r[1]), r[2])
                for r in await self._session.fetch(
                    f"SELECT id, content_hash, key FROM context_snapshots WHERE id IN ({marks})",
                    list(latest),
                )
            }
            rows = [
                (m, h, _blob(v))
                for m, h, v in latest.values()
                if current.get(m.id) == (m.content_hash, m.key)
            ]
            await db.executemany(
                "DELETE FROM context_embeddings WHERE id = ?", [(m.id,) for m, _, _ in rows]
            )
            await db.executemany(
                "INSERT INTO context_embeddings (id, text_hash, embedding) VALUES (?, ?, ?)",
                [(m.id, h, b) for m, h, b in rows],
            )
            await db.executemany(
                "INSERT INTO context_vectors (id, project, layer, embedding) VALUES (?, ?, ?, ?)",
                [(m.id, m.project, m.layer.value, b) for m, _, b in rows],
            )
            await db.executemany(
                "INSERT INTO context_vectors_bit (id, project, layer, embedding)"
                " VALUES (?, ?, ?, vec_quantize_binary(?))",
                [(m.id, m.project, m.layer.value, b) for m, _, b in rows],
            )
        for m, _, _ in rows:
            self._counts.pop(m.project, None)

    async def _project_size(self, project: str) -> int:
        cached = self._counts.get(project)
        if cached is not None and time.monotonic() - cached[0] < _COUNT_TTL_S:
            return cached[1]
        rows = await self._session.fetch(
            "SELECT count(*) FROM context_snapshots WHERE project = ?", (project,)
        )
        size = int(rows[0][0])
        self._counts[project] = (time.monotonic(), size)
        return size

    async def search_vectors(
        self, project: str, vector: Vector, *, layer: Layer | None, limit: int
    ) -> list[VectorMatch]:
        """Nearest rows of one project: exact for small projects, coarse + rescore for large."""
        params: dict[str, Any] = {"q": _blob(vector), "project": project, "k": min(limit, KNN_MAX)}
        layer_filter = ""
        if layer is not None:
            layer_filter = " AND layer = :layer"
            params["layer"] = layer.value
        async with self._session.read("vector search"):
            if await self._project_size(project) <= self._exact_max:
                rows = await self._session.fetch(
                    "SELECT id, distance FROM context_vectors WHERE embedding MATCH :q"
                    f" AND k = :k AND project = :project{layer_filter} ORDER BY distance",
                    params,
                )
            else:
                params["coarse"] = min(max(limit * COARSE_FACTOR, COARSE_MIN), KNN_MAX)
                rows = await self._session.fetch(
                    "WITH coarse AS (SELECT id FROM context_vectors_bit"
                    " WHERE embedding MATCH vec_quantize_binary(:q) AND k = :coarse"
                    f" AND project = :project{layer_filter})"
                    " SELECT e.id, vec_distance_cosine(e.embedding, :q) AS distance"
                    " FROM context_embeddings AS e JOIN coarse USING (id)"
                    " ORDER BY distance LIMIT :k",
                    params,
                )
        return [VectorMatch(id=int(r[0]), distance=float(r[1])) for r in rows]

    async def missing_vectors(self, *, limit: int) -> list[Memory]:
        """Rows without a vector, oldest first."""
        async with self._session.read("finding rows to embed"):
            return await self._session.fetch_memories(
                "SELECT s.* FROM context_snapshots AS s"
                " WHERE NOT EXISTS (SELECT 1 FROM context_embeddings AS e WHERE e.id = s.id)"
                " ORDER BY s.id LIMIT ?",
                (limit,),
            )

    async def vector_stats(self) -> tuple[int, int]:
        """(rows with a vector, rows without one)."""
        async with self._session.read("counting vectors"):
            rows = await self._session.fetch(
                "SELECT (SELECT count(*) FROM context_embeddings),"
                " (SELECT count(*) FROM context_snapshots)"
            )
        indexed, total = int(rows[0][0]), int(rows[0][1])
        return indexed, total - indexed
