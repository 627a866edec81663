"""A store for benchmarks: the real SQLite backend and services, with a frozen clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

from memory_core.config import Limits, RankingPolicy, TierPolicy
from memory_core.embeddings import LazyEmbedder, load_embedder, parse_embedding_model
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    SqliteVectorIndex,
    apply_migrations,
    open_database,
)

FIXED_NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FixedClock:
    """Every read and write happens at the same instant: tiers and recency stay neutral."""

    def now(self) -> datetime:
        return FIXED_NOW


@dataclass
class BenchStore:
    """An open database and the service over it (with an indexer when a model is set)."""

    db: aiosqlite.Connection
    service: MemoryService
    embedder: LazyEmbedder | None


async def open_bench_store(
    path: Path, *, model: str, ranking: RankingPolicy | None = None
) -> BenchStore:
    """Open and migrate `path`, load `model` ('none' for keyword only) and build the service."""
    db = await open_database(path)
    await apply_migrations(db)
    session = SqliteSession(db)
    indexer = None
    lazy = None
    spec = parse_embedding_model(model)
    if spec.kind != "none":
        lazy = LazyEmbedder(lambda: load_embedder(spec), model_id=spec.model_id, dims=spec.dims)
        await lazy.wait()
        vectors = SqliteVectorIndex(session)
        await vectors.ensure_model(spec.model_id, spec.dims)
        indexer = Indexer(vectors=vectors, source=lazy)
    service = MemoryService(
        repo=SqliteMemoryRepository(session),
        clock=FixedClock(),
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=ranking or RankingPolicy(),
        indexer=indexer,
    )
    return BenchStore(db=db, service=service, embedder=lazy)
