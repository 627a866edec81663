"""A backfill asked for while one runs is not lost: rows a hook wrote as the running one ended."""

from __future__ import annotations

from dataclasses import replace

from memory_core.domain.models import Layer, Memory
from memory_core.ports import VectorIndex
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService
from tests.backends import StorageUnderTest
from tests.fakes import ready_fake


class _LateWrite:
    """A vector index where, the first time the backfill finds no row left, a hook writes one
    (without a vector) and asks for a backfill, before the running one has ended."""

    def __init__(self, inner: VectorIndex, late: MemoryService, indexer: Indexer) -> None:
        self.inner = inner
        self.late = late
        self.indexer = indexer
        self.written = False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def missing_vectors(self, *, limit: int) -> list[Memory]:
        rows = await self.inner.missing_vectors(limit=limit)
        if not rows and not self.written:
            self.written = True
            await self.late.append("p", Layer.EPISODIC, "the hook wrote this one late")
            self.indexer.schedule_backfill()  # what the warm server's `index` does
        return rows


async def test_a_request_during_the_last_look_makes_the_backfill_look_again(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    lazy, fake = ready_fake()
    vectors = storage.vectors()
    await vectors.ensure_model(lazy.model_id, lazy.dims)
    indexer = Indexer(vectors=vectors, source=lazy)
    keyword_only = replace(service, indexer=None)  # a hook: rows without vectors
    await keyword_only.append("p", Layer.EPISODIC, "green tea in the morning")
    indexer.vectors = _LateWrite(vectors, keyword_only, indexer)  # type: ignore[assignment]
    indexer.schedule_backfill()
    task = indexer._backfiller
    assert task is not None
    await task
    assert await vectors.vector_stats() == (2, 0)  # both embedded, none left waiting
    assert sorted(t for call in fake.calls for t in call) == [
        "green tea in the morning",
        "the hook wrote this one late",
    ]  # each once
    await indexer.aclose()
