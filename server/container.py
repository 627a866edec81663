"""Composition root: open the store, migrate it and build the services, once per entry point."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from memory_core.clock import SystemClock
from memory_core.config.policies import RankingPolicy
from memory_core.domain.redaction import RedactionPolicy
from memory_core.embeddings import LazyEmbedder, load_embedder
from memory_core.ports import Clock, JobLeases, MemoryRepository
from memory_core.services.conversations import ConversationService
from memory_core.services.indexing import Indexer
from memory_core.services.maintenance import MaintenanceService
from memory_core.services.memories import MemoryService
from memory_core.services.pressure import cap_on_write
from memory_core.services.session_start import SessionStartService
from server.backends import Backend, KnowledgeStores, open_backend
from server.settings import Settings

if TYPE_CHECKING:
    # The knowledge services load numpy; the hooks import this module (server.hooks.services)
    # and never use them, so they are imported in build_knowledge, where they are built.
    from memory_core.config.knowledge import KnowledgePolicy
    from memory_core.ports.embeddings import EmbedderSource
    from memory_core.services.business import BusinessService
    from memory_core.services.preferences import PreferenceService
    from memory_core.services.scratchpad import ScratchpadService
    from memory_core.summarizers import OpenAIChatSummarizer

__all__ = ["Container", "KnowledgeServices", "build_knowledge", "open_container"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class KnowledgeServices:
    """The knowledge services: the session scratchpad, user preferences, tenant documents."""

    scratchpad: ScratchpadService
    preferences: PreferenceService
    business: BusinessService


def build_knowledge(
    stores: KnowledgeStores,
    embedder: EmbedderSource | None,
    clock: Clock,
    policy: KnowledgePolicy,
    *,
    read_wait: float = 0.0,
    redaction: RedactionPolicy | None = None,
    ranking: RankingPolicy | None = None,
) -> KnowledgeServices:
    """Build the services on the stores of the configured backend.

    `read_wait` is how long a search by meaning waits for a model still loading;
    `redaction` is the gate every write of the three tiers passes (default: redact all);
    `ranking` gives the match-strength bands every search-like answer shares.
    """
    from memory_core.domain.ranking import match_thresholds
    from memory_core.services.business import BusinessService
    from memory_core.services.embedding_access import EmbeddingAccess
    from memory_core.services.preferences import PreferenceService
    from memory_core.services.scratchpad import ScratchpadService

    gate = redaction or RedactionPolicy()
    match = match_thresholds(ranking or RankingPolicy())
    access = EmbeddingAccess(
        source=embedder, write_wait=policy.embed_wait_seconds, read_wait=read_wait
    )
    preferences = PreferenceService(
        preferences=stores.preferences,
        playbooks=stores.playbooks,
        embedding=access,
        clock=clock,
        policy=policy,
        redaction=gate,
        match=match,
    )
    business = BusinessService(
        store=stores.documents,
        embedding=access,
        clock=clock,
        policy=policy,
        redaction=gate,
        match=match,
    )
    scratchpad = ScratchpadService(
        store=stores.scratchpad,
        preferences=preferences,
        business=business,
        embedding=access,
        clock=clock,
        policy=policy,
        redaction=gate,
    )
    return KnowledgeServices(scratchpad=scratchpad, preferences=preferences, business=business)


@dataclass(frozen=True)
class Container:
    """Everything a tool, a job or a CLI command needs."""

    settings: Settings
    repo: MemoryRepository
    clock: Clock
    memories: MemoryService
    embedder: LazyEmbedder | None
    indexer: Indexer | None
    conversations: ConversationService
    knowledge: KnowledgeServices
    start: SessionStartService  # the session-start briefing (hooks, load_context, a prompt)
    maintenance: MaintenanceService  # tiers, pruning, stats (tools, CLI, scheduler)
    leases: JobLeases | None = None  # who runs scheduled jobs (None: this process always does)
    backend: Backend | None = None  # the open stores (the warm hook listener serves hooks on them)

    def project(self, name: str | None) -> str:
        """The project a call is about: the one it names, else the configured default."""
        return name if name is not None else self.settings.default_project()


def _summarizer(settings: Settings) -> OpenAIChatSummarizer | None:
    """The operator's summarizer endpoint, when one is configured."""
    if not settings.summarizer_url:
        return None
    # Imported here: it loads an HTTP client (~30 ms) that most processes never use.
    from memory_core.summarizers import OpenAIChatSummarizer

    key = settings.summarizer_api_key
    return OpenAIChatSummarizer(
        settings.summarizer_url,
        settings.summarizer_model,
        api_key=key.get_secret_value() if key else None,
        timeout=settings.summarizer_timeout,
    )


@asynccontextmanager
async def open_container(
    settings: Settings,
    clock: Clock | None = None,
    *,
    embedder: LazyEmbedder | None = None,
    check_model: bool = True,
    serving: bool = False,
) -> AsyncIterator[Container]:
    """Open the database (WAL, busy timeout, sqlite-vec), migrate it, build the services.

    Args:
        settings: The configuration.
        clock: Overrides the wall clock (tests).
        embedder: Overrides the configured embedder (tests).
        check_model: Refuse a store indexed by another model (off only for `reindex`).
        serving: A long-running server (see server.backends.open_backend).

    Raises:
        SchemaMismatchError: The store was indexed with another embedding model.
    """
    stack = AsyncExitStack()
    try:
        # SQLite file by default, PostgreSQL when MEMSTRATA_DATABASE_URL is set (server/backends).
        backend = await stack.enter_async_context(open_backend(settings, serving=serving))
        repo = backend.repo
        spec = settings.embedding
        if embedder is None and spec.kind != "none":
            embedder = LazyEmbedder(
                lambda: load_embedder(spec), model_id=spec.model_id, dims=spec.dims
            )
        indexer = None
        if embedder is not None:
            vectors = backend.vectors(settings.vector_exact_max)
            if check_model:
                await vectors.ensure_model(embedder.model_id, embedder.dims)
            indexer = Indexer(vectors=vectors, source=embedder, model_wait=settings.embedding_wait)
        the_clock = clock or SystemClock()
        # The storage cap's background enforcement ends before the store closes (LIFO).
        cap = cap_on_write(repo, the_clock, settings.tiers, settings.pressure)
        if cap is not None:
            stack.push_async_callback(cap.close)
        memories = MemoryService(
            repo=repo,
            clock=the_clock,
            limits=settings.limits,
            tiers=settings.tiers,
            ranking=settings.ranking,
            indexer=indexer,
            redaction=settings.redaction,
            keyword_reader=backend.keyword_reader,
            cap=cap,
        )
        knowledge = build_knowledge(
            backend.knowledge,
            embedder,
            the_clock,
            settings.knowledge,
            read_wait=settings.embedding_wait,
            redaction=settings.redaction,
            ranking=settings.ranking,
        )
        conversations = ConversationService(
            store=backend.conversations,
            clock=the_clock,
            policy=settings.conversation,
            summarizer=_summarizer(settings),
            redaction=settings.redaction,
            session_notes=knowledge.scratchpad.notes_of,
        )
        backend.log_opened(embedder.model_id if embedder else "none")
        yield Container(
            settings=settings,
            repo=repo,
            clock=the_clock,
            memories=memories,
            embedder=embedder,
            indexer=indexer,
            conversations=conversations,
            knowledge=knowledge,
            start=SessionStartService(
                repo=repo,
                clock=the_clock,
                tiers=settings.tiers,
                preferences=backend.knowledge.preferences,
                hook_sessions=backend.hook_sessions,
            ),
            maintenance=MaintenanceService(
                repo=repo, clock=the_clock, policy=settings.tiers, pressure=settings.pressure
            ),
            leases=backend.leases,
            backend=backend,
        )
    finally:
        await stack.aclose()
        log.info("store.closed")
