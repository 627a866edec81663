"""SqliteDocumentStore: business documents per tenant as chunks, FTS5 and in-memory vectors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory_core.domain.knowledge import Chunk, DocumentDraft, DocumentOrigin, DocumentRecord
from memory_core.ports.knowledge import DocumentWrite
from memory_core.storage.records import ChunkMatrix, RowReader, RowWriter
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.shared_patterns import SqliteSharedPatternStore

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector


__all__ = ["SqliteDocumentStore"]

_ROWS = RowReader(decode_time)
_WRITE = RowWriter(encode_time, flag=int)


class SqliteDocumentStore:
    """Chunks in knowledge_chunks (+ FTS5); vector search is brute force over a cached matrix.

    Why brute force: a tenant's chunks number in the thousands, and one float32 matrix product
    over them takes well under a millisecond (docs/business_context.md), with exact results.
    The matrix is rebuilt when the tenant's revision (bumped by every write, by any process
    sharing the file) differs from the cached one.
    """

    def __init__(self, session: SqliteSession) -> None:
        self._session = session
        self._matrices: dict[str, ChunkMatrix] = {}
        # The shared-pattern pool reads documents across tenants (opted-in ones only).
        self.shared = SqliteSharedPatternStore(session)

    async def get_document(self, tenant: str, source: str) -> DocumentRecord | None:
        """The stored document of a source."""
        async with self._session.read("reading a document"):
            rows = await self._session.fetch(
                "SELECT * FROM knowledge_documents WHERE tenant = ? AND source = ?",
                (tenant, source),
            )
        return _ROWS.document(rows[0]) if rows else None

    async def embedded_chunks(self, document_id: int, model_id: str) -> int:
        """How many chunks of a document hold a vector of `model_id`."""
        async with self._session.read("counting embedded chunks"):
            rows = await self._session.fetch(
                "SELECT count(*) FROM knowledge_chunks WHERE document_id = ? AND embed_model = ?",
                (document_id, model_id),
            )
        return int(rows[0][0])

    async def put_document(
        self, draft: DocumentDraft, vectors: Vector | None, model_id: str | None, now: datetime
    ) -> DocumentWrite:
        """Store a document and its chunks, replacing an older version, in one transaction."""
        async with self._session.write("storing a document") as db:
            old = await self._session.fetch(
                "SELECT * FROM knowledge_documents WHERE tenant = ? AND source = ?",
                (draft.tenant, draft.source),
            )
            if old and old[0]["content_hash"] == draft.content_hash:
                return DocumentWrite(document=_ROWS.document(old[0]), status="unchanged")
            if old:
                # Chunks go with their document (ON DELETE CASCADE), and the FTS rows with them.
                await db.execute("DELETE FROM knowledge_documents WHERE id = ?", (old[0]["id"],))
            rows = await self._session.fetch(
                "INSERT INTO knowledge_documents (tenant, source, origin, content_hash, body,"
                " chunk_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING *",
                _WRITE.document(draft, decode_time(old[0]["created_at"]) if old else now, now),
            )
            doc_id = rows[0]["id"]
            await db.executemany(
                "INSERT INTO knowledge_chunks (document_id, tenant, position, start_char,"
                " end_char, text, embedding, embed_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                _WRITE.chunks(doc_id, draft.tenant, draft.chunks, vectors, model_id),
            )
            await db.execute(
                "INSERT INTO knowledge_revisions (tenant, revision) VALUES (?, 1)"
                " ON CONFLICT (tenant) DO UPDATE SET revision = revision + 1",
                (draft.tenant,),
            )
        return DocumentWrite(
            document=_ROWS.document(rows[0]), status="replaced" if old else "created"
        )

    async def keyword_candidates(self, tenant: str, fts: str, *, limit: int) -> list[int]:
        """Chunk ids of a tenant matching an FTS5 expression, best BM25 first."""
        async with self._session.read("keyword search of business context"):
            rows = await self._session.fetch(
                "SELECT c.id FROM knowledge_chunks_fts AS f"
                " JOIN knowledge_chunks AS c ON c.id = f.rowid"
                " WHERE knowledge_chunks_fts MATCH ? AND c.tenant = ?"
                " ORDER BY bm25(knowledge_chunks_fts) LIMIT ?",
                (fts, tenant, limit),
            )
        return [int(r[0]) for r in rows]

    async def _matrix(self, tenant: str, model_id: str) -> ChunkMatrix | None:
        import numpy as np

        rows = await self._session.fetch(
            "SELECT revision FROM knowledge_revisions WHERE tenant = ?", (tenant,)
        )
        if not rows:
            return None
        revision = int(rows[0][0])
        cached = self._matrices.get(tenant)
        if cached is not None and cached.revision == revision and cached.model_id == model_id:
            return cached
        found = await self._session.fetch(
            "SELECT id, embedding FROM knowledge_chunks"
            " WHERE tenant = ? AND embed_model = ? ORDER BY id",
            (tenant, model_id),
        )
        ids = np.fromiter((int(r[0]) for r in found), dtype=np.int64, count=len(found))
        if found:
            vectors = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32)
            vectors = vectors.reshape(len(found), -1)
        else:
            vectors = np.zeros((0, 1), dtype=np.float32)
        matrix = ChunkMatrix(revision=revision, model_id=model_id, ids=ids, vectors=vectors)
        self._matrices[tenant] = matrix
        return matrix

    async def vector_candidates(
        self, tenant: str, vector: Vector, model_id: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the nearest chunks of a tenant, nearest first."""
        async with self._session.read("vector search of business context"):
            matrix = await self._matrix(tenant, model_id)
        return [] if matrix is None else matrix.nearest(vector, limit)

    async def chunks(self, tenant: str, ids: Sequence[int]) -> list[Chunk]:
        """Chunks of a tenant by id, in the order of `ids`."""
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        async with self._session.read("reading chunks"):
            rows = await self._session.fetch(
                "SELECT c.*, d.source FROM knowledge_chunks AS c"
                " JOIN knowledge_documents AS d ON d.id = c.document_id"
                f" WHERE c.tenant = ? AND c.id IN ({marks})",
                (tenant, *ids),
            )
        by_id = {int(r["id"]): _ROWS.chunk(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def documents(
        self, tenant: str, origins: Sequence[DocumentOrigin] | None
    ) -> list[tuple[DocumentRecord, str]]:
        """Documents of a tenant (of these origins) with their text, oldest first."""
        sql, params = "SELECT * FROM knowledge_documents WHERE tenant = ?", [tenant]
        if origins is not None:
            sql += f" AND origin IN ({', '.join('?' for _ in origins)})"
            params.extend(o.value for o in origins)
        async with self._session.read("listing documents"):
            rows = await self._session.fetch(sql + " ORDER BY created_at, id", params)
        return [(_ROWS.document(r), str(r["body"])) for r in rows]

    async def delete_documents(self, tenant: str, sources: Sequence[str] | None) -> list[str]:
        """Delete documents of a tenant (these sources, or all); chunks and FTS rows follow."""
        sql, params = "DELETE FROM knowledge_documents WHERE tenant = ?", [tenant]
        if sources is not None:
            sql += f" AND source IN ({', '.join('?' for _ in sources)})"
            params.extend(sources)
        async with self._session.write("deleting documents") as db:
            rows = await self._session.fetch(sql + " RETURNING source", params)
            if rows:
                await db.execute(
                    "UPDATE knowledge_revisions SET revision = revision + 1 WHERE tenant = ?",
                    (tenant,),
                )
        return sorted(str(r[0]) for r in rows)
