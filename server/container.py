"""Composition root: open the store, migrate it and build the services, once per entry point."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import structlog

from memory_core.clock import SystemClock
from memory_core.embeddings import LazyEmbedder, load_embedder
from memory_core.ports import Clock, MemoryRepository
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    SqliteVectorIndex,
    apply_migrations,
    open_database,
)
from server.settings import Settings

__all__ = ["Container", "open_container"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Container:
    """Everything a tool, a job or a CLI command needs."""

    settings: Settings
    repo: MemoryRepository
    clock: Clock
    memories: MemoryService
    embedder: LazyEmbedder | None
    indexer: Indexer | None

    def project(self, name: str | None) -> str:
        """The project a call is about: the one it names, else the configured default."""
        return name if name is not None else self.settings.project


@asynccontextmanager
async def open_container(
    settings: Settings,
    clock: Clock | None = None,
    *,
    embedder: LazyEmbedder | None = None,
    check_model: bool = True,
) -> AsyncIterator[Container]:
    """Open the database (WAL, busy timeout, sqlite-vec), migrate it, build the services.

    Args:
        settings: The configuration.
        clock: Overrides the wall clock (tests).
        embedder: Overrides the configured embedder (tests).
        check_model: Refuse a store indexed by another model (off only for `reindex`).

    Raises:
        SchemaMismatchError: The store was indexed with another embedding model.
    """
    db = await open_database(settings.db)
    try:
        applied = await apply_migrations(db)
        session = SqliteSession(db)
        repo = SqliteMemoryRepository(session)
        spec = settings.embedding
        if embedder is None and spec.kind != "none":
            embedder = LazyEmbedder(
                lambda: load_embedder(spec), model_id=spec.model_id, dims=spec.dims
            )
        indexer = None
        if embedder is not None:
            vectors = SqliteVectorIndex(session, exact_max=settings.vector_exact_max)
            if check_model:
                await vectors.ensure_model(embedder.model_id, embedder.dims)
            indexer = Indexer(vectors=vectors, source=embedder)
        the_clock = clock or SystemClock()
        memories = MemoryService(
            repo=repo,
            clock=the_clock,
            limits=settings.limits,
            tiers=settings.tiers,
            ranking=settings.ranking,
            indexer=indexer,
        )
        log.info(
            "store.opened",
            db=str(settings.db),
            migrations_applied=applied,
            embedding_model=embedder.model_id if embedder else "none",
        )
        yield Container(
            settings=settings,
            repo=repo,
            clock=the_clock,
            memories=memories,
            embedder=embedder,
            indexer=indexer,
        )
    finally:
        await db.close()
        log.info("store.closed")
