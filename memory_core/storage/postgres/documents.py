"""PostgresDocumentStore: business documents per tenant as chunks, tsvector, in-memory vectors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memory_core.domain.knowledge import Chunk, DocumentDraft, DocumentOrigin, DocumentRecord
from memory_core.ports.embeddings import Vector
from memory_core.ports.knowledge import DocumentWrite
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.scratchpad import lock_text
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.postgres.shared_patterns import PostgresSharedPatternStore
from memory_core.storage.postgres.tsquery import to_tsquery_text
from memory_core.storage.records import ChunkMatrix, RowReader, RowWriter

__all__ = ["PostgresDocumentStore"]

_ROWS = RowReader(aware)
_WRITE = RowWriter(aware)


# The keyword rank of context_snapshots (repository.py): normalisation 1 favours short chunks.
_RANK = "ts_rank_cd(c.search_vector, q, 1)"


class PostgresDocumentStore:
    """Chunks in knowledge_chunks (+ a tsvector GIN index); exact vector search in memory.

    As in SQLite (docs/business_context.md): a tenant's chunks number in the thousands and one
    float32 matrix product over them is exact and well under a millisecond. Each replica keeps
    its own matrix per tenant and rebuilds it when the tenant's revision (bumped in the same
    transaction as every write, by any replica) differs from the cached one.
    """

    def __init__(self, session: PostgresSession) -> None:
        self._session = session
        self._matrices: dict[str, ChunkMatrix] = {}
        # The shared-pattern pool reads documents across tenants (opted-in ones only).
        self.shared = PostgresSharedPatternStore(session)

    async def get_document(self, tenant: str, source: str) -> DocumentRecord | None:
        """The stored document of a source."""
        async with self._session.read("reading a document") as conn:
            row = await conn.fetchrow(
                "SELECT * FROM knowledge_documents WHERE tenant = $1 AND source = $2",
                tenant,
                source,
            )
        return _ROWS.document(row) if row is not None else None

    async def embedded_chunks(self, document_id: int, model_id: str) -> int:
        """How many chunks of a document hold a vector of `model_id`."""
        async with self._session.read("counting embedded chunks") as conn:
            found = await conn.fetchval(
                "SELECT count(*) FROM knowledge_chunks WHERE document_id = $1 AND embed_model = $2",
                document_id,
                model_id,
            )
        return int(found or 0)

    async def put_document(
        self, draft: DocumentDraft, vectors: Vector | None, model_id: str | None, now: datetime
    ) -> DocumentWrite:
        """Store a document and its chunks, replacing an older version, in one transaction."""
        async with self._session.write("storing a document") as conn:
            # Two writers of one source take turns: the second sees the first's version.
            await lock_text(conn, f"document\x1f{draft.tenant}\x1f{draft.source}")
            old = await conn.fetchrow(
                "SELECT * FROM knowledge_documents WHERE tenant = $1 AND source = $2",
                draft.tenant,
                draft.source,
            )
            if old is not None and old["content_hash"] == draft.content_hash:
                return DocumentWrite(document=_ROWS.document(old), status="unchanged")
            if old is not None:
                # Chunks go with their document (ON DELETE CASCADE).
                await conn.execute("DELETE FROM knowledge_documents WHERE id = $1", old["id"])
            row = await conn.fetchrow(
                "INSERT INTO knowledge_documents (tenant, source, origin, content_hash, body,"
                " chunk_count, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                " RETURNING *",
                *_WRITE.document(draft, old["created_at"] if old is not None else now, now),
            )
            await conn.executemany(
                "INSERT INTO knowledge_chunks (document_id, tenant, position, start_char,"
                " end_char, text, embedding, embed_model) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                _WRITE.chunks(row["id"], draft.tenant, draft.chunks, vectors, model_id),
            )
            await conn.execute(
                "INSERT INTO knowledge_revisions AS r (tenant, revision) VALUES ($1, 1)"
                " ON CONFLICT (tenant) DO UPDATE SET revision = r.revision + 1",
                draft.tenant,
            )
        return DocumentWrite(
            document=_ROWS.document(row), status="replaced" if old is not None else "created"
        )

    async def keyword_candidates(self, tenant: str, fts: str, *, limit: int) -> list[int]:
        """Chunk ids of a tenant matching an FTS5 expression, best rank first."""
        tsquery = to_tsquery_text(fts)
        if not tsquery:
            return []
        async with self._session.read("keyword search of business context") as conn:
            rows = await conn.fetch(
                "SELECT c.id FROM knowledge_chunks AS c, to_tsquery('memstrata', $1) AS q"
                f" WHERE c.search_vector @@ q AND c.tenant = $2 ORDER BY {_RANK} DESC, c.id"
                " LIMIT $3",
                tsquery,
                tenant,
                limit,
            )
        return [int(r[0]) for r in rows]

    async def _matrix(self, conn: Any, tenant: str, model_id: str) -> ChunkMatrix | None:
        revision = await conn.fetchval(
            "SELECT revision FROM knowledge_revisions WHERE tenant = $1", tenant
        )
        if revision is None:
            return None
        cached = self._matrices.get(tenant)
        if cached is not None and cached.revision == revision and cached.model_id == model_id:
            return cached
        found = await conn.fetch(
            "SELECT id, embedding FROM knowledge_chunks"
            " WHERE tenant = $1 AND embed_model = $2 ORDER BY id",
            tenant,
            model_id,
        )
        ids = np.fromiter((int(r[0]) for r in found), dtype=np.int64, count=len(found))
        if found:
            vectors = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4")
            vectors = vectors.astype(np.float32).reshape(len(found), -1)
        else:
            vectors = np.zeros((0, 1), dtype=np.float32)
        matrix = ChunkMatrix(revision=int(revision), model_id=model_id, ids=ids, vectors=vectors)
        self._matrices[tenant] = matrix
        return matrix

    async def vector_candidates(
        self, tenant: str, vector: Vector, model_id: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the nearest chunks of a tenant, nearest first."""
        # The revision and the chunks are read in one snapshot, so they belong together.
        async with self._session.snapshot("vector search of business context") as conn:
            matrix = await self._matrix(conn, tenant, model_id)
        return [] if matrix is None else matrix.nearest(vector, limit)

    async def chunks(self, tenant: str, ids: Sequence[int]) -> list[Chunk]:
        """Chunks of a tenant by id, in the order of `ids`."""
        if not ids:
            return []
        async with self._session.read("reading chunks") as conn:
            rows = await conn.fetch(
                "SELECT c.id, c.tenant, c.position, c.start_char, c.end_char, c.text, d.source"
                " FROM knowledge_chunks AS c JOIN knowledge_documents AS d ON d.id = c.document_id"
                " WHERE c.tenant = $1 AND c.id = ANY($2::bigint[])",
                tenant,
                [int(i) for i in ids],
            )
        by_id = {int(r["id"]): _ROWS.chunk(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def documents(
        self, tenant: str, origins: Sequence[DocumentOrigin] | None
    ) -> list[tuple[DocumentRecord, str]]:
        """Documents of a tenant (of these origins) with their text, oldest first."""
        sql = "SELECT * FROM knowledge_documents WHERE tenant = $1"
        params: list[Any] = [tenant]
        if origins is not None:
            sql += " AND origin = ANY($2::text[])"
            params.append([o.value for o in origins])
        async with self._session.read("listing documents") as conn:
            rows = await conn.fetch(sql + " ORDER BY created_at, id", *params)
        return [(_ROWS.document(r), str(r["body"])) for r in rows]

    async def delete_documents(self, tenant: str, sources: Sequence[str] | None) -> list[str]:
        """Delete documents of a tenant (these sources, or all); their chunks follow."""
        sql = "DELETE FROM knowledge_documents WHERE tenant = $1"
        params: list[Any] = [tenant]
        if sources is not None:
            sql += " AND source = ANY($2::text[])"
            params.append(list(sources))
        async with self._session.write("deleting documents") as conn:
            rows = await conn.fetch(sql + " RETURNING source", *params)
            if rows:
                await conn.execute(
                    "UPDATE knowledge_revisions SET revision = revision + 1 WHERE tenant = $1",
                    tenant,
                )
        return sorted(str(r[0]) for r in rows)
