"""SqliteSharedPatternStore: the opt-in table, the anonymised passages and published patterns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory_core.domain.pattern_pool import PooledPattern, PoolPassage
from memory_core.ports.knowledge import PendingDocument, SharedPattern, SharingStatus
from memory_core.storage.shared_rows import (
    LIVE_PATTERNS,
    live_patterns,
    passage_rows,
    pool_passages,
)
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["SqliteSharedPatternStore"]


class SqliteSharedPatternStore:
    """The pool of anonymised sentences of opted-in tenants (see the port for the rules)."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def opt_in(self, tenant: str, now: datetime) -> bool:
        """Add the tenant to the contributors; False when it already was one."""
        async with self._session.write("opting in to shared patterns"):
            rows = await self._session.fetch(
                "INSERT INTO shared_tenants (tenant, opted_in_at) VALUES (?, ?)"
                " ON CONFLICT (tenant) DO NOTHING RETURNING tenant",
                (tenant, encode_time(now)),
            )
        return bool(rows)

    async def opt_out(self, tenant: str) -> tuple[int, int]:
        """Remove the tenant and everything it contributed, in one transaction."""
        async with self._session.write("opting out of shared patterns") as db:
            gone = await self._session.fetch(
                "DELETE FROM shared_patterns WHERE passage_id IN"
                " (SELECT id FROM shared_passages WHERE tenant = ?)"
                " OR id IN (SELECT pattern_id FROM shared_pattern_holders WHERE tenant = ?)"
                " RETURNING id",
                (tenant, tenant),
            )
            passages = await self._session.fetch(
                "DELETE FROM shared_passages WHERE tenant = ? RETURNING id", (tenant,)
            )
            await db.execute("DELETE FROM shared_pattern_holders WHERE tenant = ?", (tenant,))
            await db.execute("DELETE FROM shared_documents WHERE tenant = ?", (tenant,))
            await db.execute("DELETE FROM shared_tenants WHERE tenant = ?", (tenant,))
        return len(passages), len(gone)

    async def status(self, tenant: str) -> SharingStatus:
        """The tenant's opt-in time and its share of the pool."""
        async with self._session.read("reading sharing status"):
            rows = await self._session.fetch(
                "SELECT (SELECT opted_in_at FROM shared_tenants WHERE tenant = ?),"
                " (SELECT count(*) FROM shared_passages WHERE tenant = ?),"
                " (SELECT count(*) FROM shared_documents WHERE tenant = ?)",
                (tenant, tenant, tenant),
            )
        since, passages, documents = rows[0]
        return SharingStatus(
            tenant=tenant,
            opted_in_at=None if since is None else decode_time(since),
            passages=int(passages),
            documents=int(documents),
        )

    async def pending_documents(self, model_id: str, *, limit: int) -> list[PendingDocument]:
        """Documents of opted-in tenants not yet read with `model_id`, oldest first."""
        async with self._session.read("finding documents for the pattern pool"):
            rows = await self._session.fetch(
                "SELECT d.id, d.tenant, d.body FROM knowledge_documents AS d"
                " JOIN shared_tenants AS t ON t.tenant = d.tenant"
                " LEFT JOIN shared_documents AS s ON s.document_id = d.id"
                " WHERE s.document_id IS NULL OR s.embed_model <> ?"
                " ORDER BY d.id LIMIT ?",
                (model_id, limit),
            )
        return [PendingDocument(id=int(r[0]), tenant=str(r[1]), body=str(r[2])) for r in rows]

    async def passage_count(self, tenant: str) -> int:
        """How many passages of the tenant are in the pool."""
        async with self._session.read("counting passages"):
            rows = await self._session.fetch(
                "SELECT count(*) FROM shared_passages WHERE tenant = ?", (tenant,)
            )
        return int(rows[0][0])

    async def add_passages(
        self,
        document: PendingDocument,
        texts: Sequence[str],
        vectors: Vector | None,
        model_id: str,
        now: datetime,
    ) -> bool:
        """Replace the document's passages and mark it read, unless it or the opt-in is gone."""
        async with self._session.write("adding passages to the pattern pool") as db:
            live = await self._session.fetch(
                "SELECT 1 FROM knowledge_documents AS d"
                " JOIN shared_tenants AS t ON t.tenant = d.tenant"
                " WHERE d.id = ? AND d.tenant = ?",
                (document.id, document.tenant),
            )
            if not live:
                return False
            await db.execute("DELETE FROM shared_passages WHERE document_id = ?", (document.id,))
            if texts and vectors is not None:
                await db.executemany(
                    "INSERT INTO shared_passages (document_id, tenant, text, embedding,"
                    " embed_model) VALUES (?, ?, ?, ?, ?)",
                    passage_rows(document, texts, vectors, model_id),
                )
            await db.execute(
                "INSERT INTO shared_documents (document_id, tenant, embed_model, passages,"
                " extracted_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (document_id) DO UPDATE SET"
                " embed_model = excluded.embed_model, passages = excluded.passages,"
                " extracted_at = excluded.extracted_at",
                (document.id, document.tenant, model_id, len(texts), encode_time(now)),
            )
        return True

    async def passages(self, model_id: str) -> list[tuple[PoolPassage, Vector]]:
        """Every passage of an opted-in tenant embedded by `model_id`, in id order."""
        async with self._session.read("reading the pattern pool"):
            rows = await self._session.fetch(
                "SELECT s.id, s.tenant, s.text, s.embedding FROM shared_passages AS s"
                " JOIN shared_tenants AS t ON t.tenant = s.tenant"
                " WHERE s.embed_model = ? ORDER BY s.id",
                (model_id,),
            )
        return pool_passages(rows)

    async def replace_patterns(self, patterns: Sequence[PooledPattern], now: datetime) -> int:
        """Publish these in place of all earlier patterns (skipping passages gone meanwhile)."""
        stored = 0
        async with self._session.write("publishing shared patterns") as db:
            await db.execute("DELETE FROM shared_patterns")
            for pattern in patterns:
                rows = await self._session.fetch(
                    "INSERT INTO shared_patterns (passage_id, holders, computed_at)"
                    " SELECT id, ?, ? FROM shared_passages WHERE id = ? RETURNING id",
                    (len(pattern.holders), encode_time(now), pattern.passage_id),
                )
                if not rows:
                    continue
                ids = [passage for _, passage in pattern.holders]
                marks = ", ".join("?" for _ in ids)
                await db.execute(
                    "INSERT INTO shared_pattern_holders (pattern_id, passage_id, tenant)"
                    f" SELECT ?, id, tenant FROM shared_passages WHERE id IN ({marks})"
                    " ON CONFLICT DO NOTHING",
                    (int(rows[0][0]), *ids),
                )
                stored += 1
        return stored

    async def patterns(self, min_tenants: int, model_id: str | None) -> list[SharedPattern]:
        """Published patterns still held by >= `min_tenants` opted-in tenants, all of them."""
        async with self._session.read("reading shared patterns"):
            rows = await self._session.fetch(LIVE_PATTERNS, ())
        return live_patterns(rows, min_tenants, model_id)
