"""Business context per tenant: ingest documents as chunks, search them, seed and export."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.agent_md import AgentSection, parse_agent_md, render_agent_md
from memory_core.domain.chunking import chunk_text
from memory_core.domain.diversity import cap_per_group
from memory_core.domain.fts_query import search_words, to_fts5_query
from memory_core.domain.inputs import check_text, content_hash
from memory_core.domain.knowledge import Chunk, DocumentDraft, DocumentOrigin, DocumentRecord
from memory_core.domain.knowledge_inputs import check_name
from memory_core.domain.match import Match, MatchThresholds, match_strength, word_share
from memory_core.domain.ranking import fuse_ranks
from memory_core.domain.redaction import RedactionPolicy, Redactor
from memory_core.errors import ConfirmationRequiredError, InvalidInputError, InvalidQueryError
from memory_core.ports import Clock
from memory_core.ports.knowledge import DocumentStore
from memory_core.services.embedding_access import EmbeddingAccess
from memory_core.services.preferences import default_match
from memory_core.services.shared_patterns import SharedHit, SharedPatternService

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector


__all__ = [
    "AsyncProgress",
    "BusinessHit",
    "BusinessSearch",
    "BusinessService",
    "IngestResult",
]

MAX_SOURCE_CHARS = 1024
MAX_DELETE_SOURCES = 1_000
MAX_QUERY_CHARS = 4_000
AsyncProgress = Callable[[int, int], Awaitable[None]]


@dataclass(frozen=True)
class IngestResult:
    """What ingesting one document did: 'created', 'replaced' or 'unchanged'."""

    document: DocumentRecord
    status: Literal["created", "replaced", "unchanged"]
    embedded: bool
    notes: list[str] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)  # credentials taken out, by kind


@dataclass(frozen=True)
class BusinessHit:
    """A chunk in the answer, how well it matches (absolute) and the ranks that put it there."""

    chunk: Chunk
    score: float
    keyword_rank: int | None
    vector_rank: int | None
    similarity: float | None
    match: Match = Match.STRONG


@dataclass(frozen=True)
class BusinessSearch:
    """The best chunks, the mode used and notes for the client.

    `dropped`: candidates left out because they matched below `min_match`. `shared_match`:
    the match strength of each of `shared`, in order.
    """

    hits: list[BusinessHit]
    mode: Literal["hybrid", "keyword"]
    candidates: int
    notes: list[str] = field(default_factory=list)
    shared: list[SharedHit] = field(default_factory=list)  # anonymised patterns of k tenants
    dropped: int = 0
    shared_match: list[Match] = field(default_factory=list)


@dataclass
class BusinessService:
    """Documents of each tenant; a tenant's calls never read another tenant's chunks."""

    store: DocumentStore
    embedding: EmbeddingAccess
    clock: Clock
    policy: KnowledgePolicy
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)
    # Memory search's bands (settings.ranking's match_*): chunks are embedded by the same
    # model, and a question against a passage is what those bands were measured on.
    match: MatchThresholds = field(default_factory=default_match)
    shared: SharedPatternService = field(init=False)

    def __post_init__(self) -> None:
        # The pool lives beside the documents it is read from (DocumentStore.shared).
        self.shared = SharedPatternService(
            store=self.store.shared,
            embedding=self.embedding,
            clock=self.clock,
            policy=self.policy,
            redaction=self.redaction,
        )

    async def ingest(
        self,
        tenant: str,
        source: str,
        text: str,
        *,
        origin: DocumentOrigin = DocumentOrigin.INGEST,
        progress: AsyncProgress | None = None,
    ) -> IngestResult:
        """Chunk, embed and store a document; the same text again is a no-op.

        A source already stored with other text has its old chunks replaced, in one
        transaction, so a search never sees half of each version.

        Args:
            tenant: Whose business context this is.
            source: The document's name (a path, URL or title), unique per tenant.
            text: The whole document.
            origin: How it arrived (client ingest, agent.md seed, scratchpad promotion).
            progress: Called with (0, chunks in total) once chunked, then with (chunks
                embedded, chunks in total) after each batch of `policy.embed_batch`.

        Raises:
            InvalidInputError: A field is empty, too long or badly formed; nothing is written.
        """
        import numpy as np

        tenant = check_name("tenant", tenant)
        source = check_text("source", source, max_chars=MAX_SOURCE_CHARS)
        if not text.strip():
            raise InvalidInputError("text", "must not be empty")
        check_text("text", text, max_chars=self.policy.max_document_chars)
        # Every way in (tool, agent.md seeding, CLI ingest, scratchpad promotion) lands here.
        gate = Redactor(self.redaction)
        source = gate.key(source)  # a source names one document: keep distinct ones distinct
        text = gate.text(text)
        digest = content_hash(text)
        existing = await self.store.get_document(tenant, source)
        if existing is not None and existing.content_hash == digest:
            return IngestResult(
                document=existing,
                status="unchanged",
                embedded=await self._embedded(existing),
                redacted=gate.counts(),
            )
        chunks = chunk_text(text, size=self.policy.chunk_chars, overlap=self.policy.chunk_overlap)
        if progress is not None:
            # Before the model (which may still be loading) is waited for: a client that
            # resets its request timeout on progress hears from the server at once.
            await progress(0, len(chunks))
        embedder, why = await self.embedding.for_write()
        vectors: Vector | None = None
        notes: list[str] = []
        if embedder is None:
            notes.append(f"{why}; chunks are found by words only.")
        else:
            batches: list[Vector] = []
            step = self.policy.embed_batch
            for begin in range(0, len(chunks), step):
                texts = [c.text for c in chunks[begin : begin + step]]
                batches.append(await self.embedding.embed(embedder, texts))
                if progress is not None:
                    await progress(min(begin + step, len(chunks)), len(chunks))
            vectors = np.concatenate(batches) if batches else None
        draft = DocumentDraft(
            tenant=tenant, source=source, origin=origin, text=text, chunks=tuple(chunks)
        )
        written = await self.store.put_document(
            draft, vectors, embedder.model_id if embedder else None, self.clock.now()
        )
        status: Literal["created", "replaced", "unchanged"] = (
            "created"
            if written.status == "created"
            else "replaced"
            if written.status == "replaced"
            else "unchanged"
        )
        return IngestResult(
            document=written.document,
            status=status,
            embedded=vectors is not None,
            notes=notes,
            redacted=gate.counts(),
        )

    async def _embedded(self, document: DocumentRecord) -> bool:
        """Whether every chunk of a stored document has a vector of the configured model."""
        model_id = self.embedding.model_id
        if model_id is None or document.chunk_count == 0:
            return False
        return await self.store.embedded_chunks(document.id, model_id) == document.chunk_count

    async def search(
        self,
        tenant: str,
        query: str,
        *,
        limit: int | None = None,
        include_shared: bool = False,
        min_match: Match | None = None,
    ) -> BusinessSearch:
        """The chunks of a tenant that best answer `query`, at most a few per document.

        About `candidates` keyword (FTS5 BM25) and vector (cosine) candidates are fused by
        reciprocal rank; then at most `max_chunks_per_source` chunks of one document are taken
        while other documents still have candidates, so one long document cannot fill every
        slot. Without a ready model the search is keyword-only and says so. With
        `include_shared`, up to `shared_results` published shared patterns that match the
        query come in `shared` (never among the tenant's own hits).

        Every hit has an absolute match strength, as a memory search hit has: from its
        cosine to the query (a vector candidate) and the share of the query's words it holds,
        on memory search's bands (`match`). With `min_match`, chunks matching more weakly are
        left out before the limit (counted in `dropped`).

        Raises:
            InvalidQueryError: The query holds no searchable word and no model is ready.
        """
        tenant = check_name("tenant", tenant)
        query = check_text("query", query, max_chars=MAX_QUERY_CHARS)
        wanted = self.policy.results if limit is None else limit
        if not 1 <= wanted <= 100:
            raise InvalidInputError("limit", "must be between 1 and 100")
        pool = self.policy.candidates
        fts = to_fts5_query(query, drop_stopwords=True)
        keyword = await self.store.keyword_candidates(tenant, fts, limit=pool) if fts else []
        embedder, why = await self.embedding.for_read()
        notes: list[str] = []
        similar: list[tuple[int, float]] = []
        vector: Vector | None = None
        if embedder is not None:
            vector = (await self.embedding.embed(embedder, [query]))[0]
            similar = [
                (cid, sim)
                for cid, sim in await self.store.vector_candidates(
                    tenant, vector, embedder.model_id, limit=pool
                )
                if sim >= self.policy.min_chunk_similarity
            ]
        elif fts is None:
            raise InvalidQueryError("query", "holds no searchable word")
        else:
            notes.append(f"{why}; used keyword search.")
        vector_ids = [cid for cid, _ in similar]
        fused = fuse_ranks({"keyword": keyword, "vector": vector_ids}, {}, self.policy.rrf_k)
        order = sorted(fused, key=lambda cid: (-fused[cid], cid))
        by_id = {c.id: c for c in await self.store.chunks(tenant, order)}
        sims = dict(similar)
        words = search_words(query, drop_stopwords=True)
        bands = {
            cid: match_strength(sims.get(cid), word_share(words, c.text), self.match)
            for cid, c in by_id.items()
        }
        ranked = [by_id[cid] for cid in order if cid in by_id]
        if min_match is not None:
            kept = [c for c in ranked if bands[c.id].order >= min_match.order]
            dropped, ranked = len(ranked) - len(kept), kept
        else:
            dropped = 0
        chosen = cap_per_group(
            ranked,
            lambda c: c.source,
            per_group=self.policy.max_chunks_per_source,
            limit=wanted,
        )
        keyword_rank = {cid: i for i, cid in enumerate(keyword, start=1)}
        vector_rank = {cid: i for i, cid in enumerate(vector_ids, start=1)}
        best = max(fused.values(), default=1.0)
        hits = [
            BusinessHit(
                chunk=c,
                score=round(fused[c.id] / best, 6),
                keyword_rank=keyword_rank.get(c.id),
                vector_rank=vector_rank.get(c.id),
                similarity=round(sims[c.id], 6) if c.id in sims else None,
                match=bands[c.id],
            )
            for c in chosen
        ]
        shared: list[SharedHit] = []
        if include_shared:
            model_id = embedder.model_id if embedder is not None else None
            shared = await self.shared.find(query, vector, model_id)
        return BusinessSearch(
            hits=hits,
            mode="hybrid" if embedder is not None else "keyword",
            candidates=len(fused),
            notes=notes,
            shared=shared,
            dropped=dropped,
            # A pattern's score is its cosine to the query (the share of its words, no model).
            shared_match=[
                match_strength(
                    h.score if vector is not None else None, word_share(words, h.text), self.match
                )
                for h in shared
            ],
        )

    async def seed_from_agent_md(
        self, tenant: str, text: str, *, progress: AsyncProgress | None = None
    ) -> list[IngestResult]:
        """Store each section of an agent.md as a document `agent.md#<heading>`.

        Uploading the same file again changes nothing; an edited section replaces its old
        version. Sections removed from the file stay stored.
        """
        tenant = check_name("tenant", tenant)
        check_text("text", text, max_chars=self.policy.max_document_chars)
        sections = parse_agent_md(text)
        if not sections:
            raise InvalidInputError("text", "holds no section with text")
        results = []
        for i, section in enumerate(sections, start=1):
            results.append(
                await self.ingest(
                    tenant, section.source, section.text, origin=DocumentOrigin.AGENT_MD
                )
            )
            if progress is not None:
                await progress(i, len(sections))
        return results

    async def list_documents(self, tenant: str) -> list[DocumentRecord]:
        """Every document of a tenant, oldest first (without its text)."""
        return [d for d, _ in await self.store.documents(check_name("tenant", tenant), None)]

    async def delete_documents(
        self, tenant: str, sources: Sequence[str] | None = None, *, confirm: bool = False
    ) -> list[str]:
        """Delete documents by source, or (`sources` None) every document of the tenant.

        Raises:
            ConfirmationRequiredError: Every document was asked for without `confirm`.
            InvalidInputError: A field is badly formed; nothing is deleted.
        """
        tenant = check_name("tenant", tenant)
        if sources is None:
            if not confirm:
                raise ConfirmationRequiredError("deleting every document of a tenant")
            return await self.store.delete_documents(tenant, None)
        if len(sources) > MAX_DELETE_SOURCES:
            raise InvalidInputError("sources", f"must hold at most {MAX_DELETE_SOURCES} items")
        sources = [check_text("sources", s, max_chars=MAX_SOURCE_CHARS) for s in sources]
        return await self.store.delete_documents(tenant, sources) if sources else []

    async def export_agent_md(self, tenant: str) -> tuple[str, int, int]:
        """An agent.md of the tenant's seeded sections and promoted snippets.

        Returns:
            (the text, seeded sections, promoted snippets).
        """
        tenant = check_name("tenant", tenant)
        docs = await self.store.documents(
            tenant, [DocumentOrigin.AGENT_MD, DocumentOrigin.PROMOTED]
        )
        seeded = [
            AgentSection(source=d.source, text=body)
            for d, body in docs
            if d.origin is DocumentOrigin.AGENT_MD
        ]
        learned = [body for d, body in docs if d.origin is DocumentOrigin.PROMOTED]
        return render_agent_md(seeded, learned), len(seeded), len(learned)
