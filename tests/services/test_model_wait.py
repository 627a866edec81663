"""Searches by meaning and appends wait, bounded, for a model still loading (both backends)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

import pytest

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.domain.models import Layer, Memory, SearchMode
from memory_core.embeddings import LazyEmbedder
from memory_core.ports import Embedder, MemoryRepository, VectorIndex
from memory_core.ports.embeddings import Vector
from memory_core.services.embedding_access import EmbeddingAccess
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService, SearchRequest
from tests.backends import StorageUnderTest
from tests.fakes import FakeEmbedder, FrozenClock, blocked_fake


def _service(
    repo: MemoryRepository,
    clock: FrozenClock,
    vectors: VectorIndex,
    lazy: LazyEmbedder,
    wait: float,
) -> MemoryService:
    return MemoryService(
        repo=repo,
        clock=clock,
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
        indexer=Indexer(vectors=vectors, source=lazy, model_wait=wait),
    )


async def _vectors(storage: StorageUnderTest, lazy: LazyEmbedder) -> VectorIndex:
    vectors = storage.vectors()
    await vectors.ensure_model(lazy.model_id, lazy.dims)
    return vectors


def _semantic(query: str) -> SearchRequest:
    return SearchRequest(project="p", query=query, mode=SearchMode.SEMANTIC)


async def test_a_search_waits_for_a_model_that_loads_in_time_and_for_the_backfill(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy, fake, release = blocked_fake()
    service = _service(repo, clock, await _vectors(storage, lazy), lazy, wait=0)
    await service.append("p", Layer.EPISODIC, "green tea in the morning")  # no model: no vector
    assert fake.calls == []
    indexer = service.indexer
    assert indexer is not None
    indexer.model_wait = 30  # generous: the test ends as soon as the model is there
    indexer.backfill_when_ready()  # what `serve` does at start-up
    asyncio.get_running_loop().call_later(0.2, release.set)

    result = await service.search(_semantic("tea morning"))

    assert result.mode is SearchMode.SEMANTIC and result.notes == []
    assert [h.memory.content for h in result.hits] == ["green tea in the morning"]
    assert result.hits[0].signals.vector_rank == 1
    await indexer.aclose()


async def test_a_search_falls_back_to_keywords_when_the_model_is_not_ready_in_time(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy, fake, release = blocked_fake()
    service = _service(repo, clock, await _vectors(storage, lazy), lazy, wait=0.1)
    try:
        await service.append("p", Layer.EPISODIC, "green tea in the morning")
        result = await service.search(SearchRequest(project="p", query="tea"))
        assert result.mode is SearchMode.KEYWORD
        assert result.notes == [
            "The embedding model was still loading after 0.1 s; used keyword search for this query."
        ]
        assert [h.memory.content for h in result.hits] == ["green tea in the morning"]
        assert fake.calls == []
    finally:
        release.set()


def _broken() -> Embedder:
    raise RuntimeError("model file /secret/path/model.onnx is corrupt")


async def test_a_failed_load_is_not_waited_for_and_its_cause_stays_in_the_log(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy = LazyEmbedder(_broken, model_id="fake-bow-32", dims=32)
    # Waiting out an hour would fail the timeout below: a failed load ends the wait at once.
    service = _service(repo, clock, await _vectors(storage, lazy), lazy, wait=3600)
    async with asyncio.timeout(30):
        stored = await service.append("p", Layer.EPISODIC, "green tea in the morning")
        result = await service.search(SearchRequest(project="p", query="tea"))
    assert stored.status == "created"
    assert result.mode is SearchMode.KEYWORD and len(result.hits) == 1
    assert "failed to load" in result.notes[0] and "/secret" not in result.notes[0]


async def test_an_append_waits_for_the_model_and_reports_its_near_duplicate(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy, _, release = blocked_fake()
    vectors = await _vectors(storage, lazy)
    service = _service(repo, clock, vectors, lazy, wait=30)
    asyncio.get_running_loop().call_later(0.2, release.set)
    first = await service.append("p", Layer.EPISODIC, "Alice likes green tea in the morning")
    again = await service.append("p", Layer.EPISODIC, "Alice likes the green tea in the morning")
    # A near duplicate adds no row (issue 32): the first is restated and named.
    assert again.status == "duplicate"
    assert again.near_duplicate is not None and again.near_duplicate.id == first.memory.id
    assert await vectors.vector_stats() == (1, 0)  # embedded, none left for a backfill


class _SlowVectors:
    """A vector index whose writes hold until `open` is set (a long backfill)."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.open = asyncio.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def put_vectors(self, items: Sequence[tuple[Memory, str, Vector]]) -> None:
        await self.open.wait()
        await self.inner.put_vectors(items)


async def test_a_long_backfill_is_waited_for_once_then_only_noted(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    fake = FakeEmbedder()
    lazy = LazyEmbedder(lambda: fake, model_id=fake.model_id, dims=fake.dims)
    slow = _SlowVectors(await _vectors(storage, lazy))
    service = _service(repo, clock, slow, lazy, wait=0)  # type: ignore[arg-type]
    keyword_only = replace(service, indexer=None)  # like an import: rows without vectors
    await keyword_only.append("p", Layer.EPISODIC, "green tea in the morning")
    indexer = service.indexer
    assert indexer is not None
    indexer.backfill_when_ready()
    await lazy.wait(10)
    indexer.model_wait = 0.2
    note = (
        "Some memories are still being embedded in the background; until then they are "
        "found by their words only."
    )
    try:
        first = await service.search(SearchRequest(project="p", query="tea"))
        indexer.model_wait = 3600  # a second wait for the same backfill would hit the timeout
        async with asyncio.timeout(30):
            second = await service.search(SearchRequest(project="p", query="tea"))
        for result in (first, second):
            assert result.mode is SearchMode.HYBRID and result.notes == [note]
            assert [h.memory.content for h in result.hits] == ["green tea in the morning"]
        slow.open.set()
        for _ in range(1500):  # the backfill goes on once its write is let through
            if await slow.inner.vector_stats() == (1, 0):
                break
            await asyncio.sleep(0.02)
        third = await service.search(_semantic("tea"))
        assert third.notes == [] and third.hits[0].signals.vector_rank == 1
    finally:
        slow.open.set()
        await indexer.aclose()


async def test_knowledge_reads_wait_for_the_model_within_their_bound() -> None:
    lazy, fake, release = blocked_fake()
    patient = EmbeddingAccess(source=lazy, write_wait=0, read_wait=30)
    asyncio.get_running_loop().call_later(0.2, release.set)
    embedder, why = await patient.for_read()
    assert embedder is fake and why is None

    other, _, never = blocked_fake()
    try:
        hasty = EmbeddingAccess(source=other, write_wait=0, read_wait=0.05)
        embedder, why = await hasty.for_read()
        assert embedder is None
        assert why == "The embedding model is unavailable (the model is still loading after 0.05 s)"
    finally:
        never.set()


@pytest.fixture(autouse=True)
def _quiet_failed_loads(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("CRITICAL")
