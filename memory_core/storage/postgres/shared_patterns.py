"""PostgresSharedPatternStore: the opt-in table, the anonymised passages and published patterns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_core.domain.pattern_pool import PooledPattern, PoolPassage
from memory_core.ports.knowledge import PendingDocument, SharedPattern, SharingStatus
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.scratchpad import lock_text
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.shared_rows import (
    LIVE_PATTERNS,
    live_patterns,
    passage_rows,
    pool_passages,
)

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["PostgresSharedPatternStore"]

# Every write to the pool takes this lock: under READ COMMITTED an opt-out could otherwise
# delete passages between a publish's check and its insert (SQLite's BEGIN IMMEDIATE already
# serialises them). Pool writes are rare (opt-in/out, the maintenance job), so one lock is cheap.
_POOL_LOCK = "shared patterns"


class PostgresSharedPatternStore:
    """The pool of anonymised sentences of opted-in tenants (see the port for the rules)."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def opt_in(self, tenant: str, now: datetime) -> bool:
        """Add the tenant to the contributors; False when it already was one."""
        async with self._session.write("opting in to shared patterns") as conn:
            await lock_text(conn, _POOL_LOCK)
            row = await conn.fetchrow(
                "INSERT INTO shared_tenants (tenant, opted_in_at) VALUES ($1, $2)"
                " ON CONFLICT (tenant) DO NOTHING RETURNING tenant",
                tenant,
                aware(now),
            )
        return row is not None

    async def opt_out(self, tenant: str) -> tuple[int, int]:
        """Remove the tenant and everything it contributed, in one transaction."""
        async with self._session.write("opting out of shared patterns") as conn:
            await lock_text(conn, _POOL_LOCK)
            gone = await conn.fetch(
                "DELETE FROM shared_patterns WHERE passage_id IN"
                " (SELECT id FROM shared_passages WHERE tenant = $1)"
                " OR id IN (SELECT pattern_id FROM shared_pattern_holders WHERE tenant = $1)"
                " RETURNING id",
                tenant,
            )
            passages = await conn.fetch(
                "DELETE FROM shared_passages WHERE tenant = $1 RETURNING id", tenant
            )
            await conn.execute("DELETE FROM shared_pattern_holders WHERE tenant = $1", tenant)
            await conn.execute("DELETE FROM shared_documents WHERE tenant = $1", tenant)
            await conn.execute("DELETE FROM shared_tenants WHERE tenant = $1", tenant)
        return len(passages), len(gone)

    async def status(self, tenant: str) -> SharingStatus:
        """The tenant's opt-in time and its share of the pool."""
        async with self._session.read("reading sharing status") as conn:
            row = await conn.fetchrow(
                "SELECT (SELECT opted_in_at FROM shared_tenants WHERE tenant = $1),"
                " (SELECT count(*) FROM shared_passages WHERE tenant = $1),"
                " (SELECT count(*) FROM shared_documents WHERE tenant = $1)",
                tenant,
            )
        since, passages, documents = row
        return SharingStatus(
            tenant=tenant,
            opted_in_at=None if since is None else aware(since),
            passages=int(passages),
            documents=int(documents),
        )

    async def pending_documents(self, model_id: str, *, limit: int) -> list[PendingDocument]:
        """Documents of opted-in tenants not yet read with `model_id`, oldest first."""
        async with self._session.read("finding documents for the pattern pool") as conn:
            rows = await conn.fetch(
                "SELECT d.id, d.tenant, d.body FROM knowledge_documents AS d"
                " JOIN shared_tenants AS t ON t.tenant = d.tenant"
                " LEFT JOIN shared_documents AS s ON s.document_id = d.id"
                " WHERE s.document_id IS NULL OR s.embed_model <> $1"
                " ORDER BY d.id LIMIT $2",
                model_id,
                limit,
            )
        return [PendingDocument(id=int(r[0]), tenant=str(r[1]), body=str(r[2])) for r in rows]

    async def passage_count(self, tenant: str) -> int:
        """How many passages of the tenant are in the pool."""
        async with self._session.read("counting passages") as conn:
            found = await conn.fetchval(
                "SELECT count(*) FROM shared_passages WHERE tenant = $1", tenant
            )
        return int(found or 0)

    async def add_passages(
        self,
        document: PendingDocument,
        texts: Sequence[str],
        vectors: Vector | None,
        model_id: str,
        now: datetime,
    ) -> bool:
        """Replace the document's passages and mark it read, unless it or the opt-in is gone."""
        async with self._session.write("adding passages to the pattern pool") as conn:
            await lock_text(conn, _POOL_LOCK)
            live = await conn.fetchval(
                "SELECT 1 FROM knowledge_documents AS d"
                " JOIN shared_tenants AS t ON t.tenant = d.tenant"
                " WHERE d.id = $1 AND d.tenant = $2 FOR KEY SHARE OF d",
                document.id,
                document.tenant,
            )
            if live is None:
                return False
            await conn.execute("DELETE FROM shared_passages WHERE document_id = $1", document.id)
            if texts and vectors is not None:
                await conn.executemany(
                    "INSERT INTO shared_passages (document_id, tenant, text, embedding,"
                    " embed_model) VALUES ($1, $2, $3, $4, $5)",
                    passage_rows(document, texts, vectors, model_id),
                )
            await conn.execute(
                "INSERT INTO shared_documents (document_id, tenant, embed_model, passages,"
                " extracted_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (document_id) DO UPDATE"
                " SET embed_model = excluded.embed_model, passages = excluded.passages,"
                " extracted_at = excluded.extracted_at",
                document.id,
                document.tenant,
                model_id,
                len(texts),
                aware(now),
            )
        return True

    async def passages(self, model_id: str) -> list[tuple[PoolPassage, Vector]]:
        """Every passage of an opted-in tenant embedded by `model_id`, in id order."""
        async with self._session.read("reading the pattern pool") as conn:
            rows = await conn.fetch(
                "SELECT s.id, s.tenant, s.text, s.embedding FROM shared_passages AS s"
                " JOIN shared_tenants AS t ON t.tenant = s.tenant"
                " WHERE s.embed_model = $1 ORDER BY s.id",
                model_id,
            )
        return pool_passages(rows)

    async def replace_patterns(self, patterns: Sequence[PooledPattern], now: datetime) -> int:
        """Publish these in place of all earlier patterns (skipping passages gone meanwhile)."""
        stored = 0
        async with self._session.write("publishing shared patterns") as conn:
            await lock_text(conn, _POOL_LOCK)
            await conn.execute("DELETE FROM shared_patterns")
            for pattern in patterns:
                pattern_id = await conn.fetchval(
                    "INSERT INTO shared_patterns (passage_id, holders, computed_at)"
                    " SELECT id, $1, $2 FROM shared_passages WHERE id = $3 RETURNING id",
                    len(pattern.holders),
                    aware(now),
                    pattern.passage_id,
                )
                if pattern_id is None:
                    continue
                await conn.execute(
                    "INSERT INTO shared_pattern_holders (pattern_id, passage_id, tenant)"
                    " SELECT $1, id, tenant FROM shared_passages WHERE id = ANY($2::bigint[])"
                    " ON CONFLICT DO NOTHING",
                    pattern_id,
                    [passage for _, passage in pattern.holders],
                )
                stored += 1
        return stored

    async def patterns(self, min_tenants: int, model_id: str | None) -> list[SharedPattern]:
        """Published patterns still held by >= `min_tenants` opted-in tenants, all of them."""
        async with self._session.read("reading shared patterns") as conn:
            rows: list[Any] = await conn.fetch(LIVE_PATTERNS)
        return live_patterns(rows, min_tenants, model_id)
