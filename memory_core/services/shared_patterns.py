"""Shared anonymised patterns: tenants opt in, a bounded job publishes what k of them hold.

Why a maintenance job and not ingest: whether a pattern may be shared is a property of the
whole pool (k tenants must hold it), which one ingest cannot decide, and deletions and
opt-outs change it too; a job that rebuilds the published set from the current pool is
always consistent with it, and ingest keeps its measured speed (the sentences of a document
are embedded later, off the request path). The job is bounded: it embeds at most
`shared_embed_per_run` sentences per run (the rest of the documents wait for the next run),
and the pool holds at most `shared_max_passages` sentences per tenant, so matching costs at
most (tenants x that)^2 vector products. Opting out, deleting a document and replacing one
take effect at once, without the job (see the port: SharedPatternStore).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.anonymise import pattern_sentences
from memory_core.domain.knowledge_inputs import check_name
from memory_core.domain.pattern_pool import PooledPattern, PoolRule, pool_patterns
from memory_core.domain.redaction import RedactionPolicy
from memory_core.domain.similarity import keyword_overlap
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock
from memory_core.ports.knowledge import PendingDocument, SharedPatternStore, SharingStatus
from memory_core.services.embedding_access import EmbeddingAccess

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["RefreshReport", "SharedHit", "SharedPatternService", "SharingChange"]

# Documents read per store call while filling the pool (bodies can be megabytes each).
_DOCUMENT_PAGE = 8
TURNED_OFF = "sharing patterns is turned off on this server (MEMSTRATA_KNOWLEDGE__SHARED_PATTERNS)"


@dataclass(frozen=True)
class SharedHit:
    """A shared pattern in a search answer: its text and how well it matches the query."""

    text: str
    score: float  # cosine to the query, or the share of the query's words without a model


@dataclass(frozen=True)
class SharingChange:
    """What opting in or out did."""

    tenant: str
    sharing: bool  # whether the tenant contributes now
    changed: bool  # False: it already was in that state
    passages_removed: int = 0
    patterns_removed: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RefreshReport:
    """What one run of the pattern job did (counts only: it names no tenant)."""

    documents_read: int
    sentences_embedded: int
    documents_left: bool  # True: the embedding budget ran out; the next run goes on
    pool: int  # anonymised sentences compared
    published: int
    notes: list[str] = field(default_factory=list)


@dataclass
class SharedPatternService:
    """Opt-in, opt-out, the pattern job and the search of published patterns."""

    store: SharedPatternStore
    embedding: EmbeddingAccess
    clock: Clock
    policy: KnowledgePolicy
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)

    @property
    def rule(self) -> PoolRule:
        """The k-tenant rule of the configured policy."""
        return PoolRule(
            min_tenants=self.policy.shared_min_tenants,
            similarity=self.policy.shared_similarity,
            word_overlap=self.policy.shared_word_overlap,
        )

    async def opt_in(self, tenant: str) -> SharingChange:
        """Let the tenant's business context contribute to the pool from the next job run.

        Raises:
            InvalidInputError: The tenant name is badly formed, or sharing is turned off.
        """
        tenant = check_name("tenant", tenant)
        if not self.policy.shared_patterns:
            raise InvalidInputError("share", TURNED_OFF)
        changed = await self.store.opt_in(tenant, self.clock.now())
        return SharingChange(
            tenant=tenant,
            sharing=True,
            changed=changed,
            notes=[
                "Anonymised sentences of this tenant's documents enter the pool at the next "
                "pattern refresh; a pattern is shared only when "
                f"{self.policy.shared_min_tenants} opted-in tenants hold it."
            ],
        )

    async def opt_out(self, tenant: str) -> SharingChange:
        """Stop contributing: the tenant's sentences and every pattern it holds go at once.

        Allowed even while sharing is turned off, so a tenant can always withdraw.
        """
        tenant = check_name("tenant", tenant)
        before = await self.store.status(tenant)
        passages, patterns = await self.store.opt_out(tenant)
        return SharingChange(
            tenant=tenant,
            sharing=False,
            changed=before.opted_in_at is not None,
            passages_removed=passages,
            patterns_removed=patterns,
        )

    async def status(self, tenant: str) -> SharingStatus:
        """Whether the tenant shares, and how much of it is in the pool."""
        return await self.store.status(check_name("tenant", tenant))

    async def refresh(self) -> RefreshReport:
        """Read new documents of opted-in tenants into the pool, then publish patterns anew.

        Bounded: no document is started once `shared_embed_per_run` sentences are embedded
        (so a run embeds at most that plus one document's `shared_max_passages`), and the
        pool holds at most `shared_max_passages` sentences per tenant.
        """
        import numpy as np

        if not self.policy.shared_patterns:
            return RefreshReport(0, 0, False, 0, 0, notes=[TURNED_OFF])
        model_id = self.embedding.model_id
        if model_id is None:
            # Matching by meaning is half of the rule; words alone would let near misses in.
            note = "No embedding model is configured; no pattern was computed."
            return RefreshReport(0, 0, False, 0, 0, notes=[note])
        read = embedded = 0
        left = False
        notes: list[str] = []
        now = self.clock.now()
        # The model is loaded only when there is something to embed: a server where no tenant
        # opted in runs this job in three queries.
        while not left and (
            page := await self.store.pending_documents(model_id, limit=_DOCUMENT_PAGE)
        ):
            embedder, why = await self.embedding.for_write()
            if embedder is None:
                notes.append(f"{why}; new documents wait for the next run.")
                break
            for document in page:
                if embedded >= self.policy.shared_embed_per_run:
                    left = True
                    break
                texts = await self._sentences(document)
                vectors: Vector | None = None
                if texts:
                    step = self.policy.embed_batch
                    vectors = np.concatenate(
                        [
                            await self.embedding.embed(embedder, texts[b : b + step])
                            for b in range(0, len(texts), step)
                        ]
                    )
                if await self.store.add_passages(document, texts, vectors, model_id, now):
                    read += 1
                    embedded += len(texts)
        pool = await self.store.passages(model_id)
        patterns: list[PooledPattern] = []
        if pool:
            matrix = np.stack([np.asarray(v, dtype=np.float32) for _, v in pool])
            patterns = pool_patterns([p for p, _ in pool], matrix, self.rule)
        published = await self.store.replace_patterns(patterns, self.clock.now())
        return RefreshReport(
            documents_read=read,
            sentences_embedded=embedded,
            documents_left=left,
            pool=len(pool),
            published=published,
            notes=notes,
        )

    async def _sentences(self, document: PendingDocument) -> list[str]:
        """The document's anonymised sentences, within what its tenant may still add."""
        room = self.policy.shared_max_passages - await self.store.passage_count(document.tenant)
        if room <= 0:
            return []
        return pattern_sentences(
            document.body,
            tenant=document.tenant,
            min_words=self.policy.shared_min_words,
            redaction=self.redaction,
            limit=room,
        )

    async def find(
        self, query: str, vector: Vector | None, model_id: str | None
    ) -> list[SharedHit]:
        """Published patterns that match a query, best first (at most `shared_results`).

        With the query's vector: cosine >= `shared_query_similarity`; without a model: the
        share of the query's content words a pattern holds >= `keyword_overlap`.
        """
        import numpy as np

        if not self.policy.shared_patterns:
            return []
        found: list[SharedHit] = []
        for pattern in await self.store.patterns(self.policy.shared_min_tenants, model_id):
            if vector is not None and pattern.vector is not None:
                score = float(np.dot(np.asarray(vector, dtype=np.float32), pattern.vector))
                if score >= self.policy.shared_query_similarity:
                    found.append(SharedHit(text=pattern.text, score=round(score, 6)))
            elif vector is None:
                share = keyword_overlap(query, pattern.text)
                if share >= self.policy.keyword_overlap:
                    found.append(SharedHit(text=pattern.text, score=round(share, 6)))
        found.sort(key=lambda h: (-h.score, h.text))
        return found[: self.policy.shared_results]
