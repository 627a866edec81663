"""Search by meaning through the service, with the deterministic fake embedder."""

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.domain.models import (
    Layer,
    Memory,
    SearchMode,
    TextMatch,
    TextQuery,
    VectorMatch,
)
from memory_core.embeddings import LazyEmbedder
from memory_core.ports import MemoryRepository
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService, SearchRequest
from tests.backends import StorageUnderTest
from tests.fakes import FakeEmbedder, FrozenClock, blocked_fake, ready_fake


async def make_service(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock, lazy: LazyEmbedder
) -> MemoryService:
    vectors = storage.vectors()
    await vectors.ensure_model(lazy.model_id, lazy.dims)
    return MemoryService(
        repo=repo,
        clock=clock,
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
        indexer=Indexer(vectors=vectors, source=lazy),
    )


@pytest.fixture
async def semantic(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> tuple[MemoryService, FakeEmbedder]:
    lazy, fake = ready_fake()
    return await make_service(storage, repo, clock, lazy), fake


async def test_semantic_search_finds_by_vector(
    semantic: tuple[MemoryService, FakeEmbedder],
) -> None:
    service, _ = semantic
    await service.append("p", Layer.EPISODIC, "green tea in the morning")
    await service.append("p", Layer.EPISODIC, "quarterly budget review")
    result = await service.search(SearchRequest(project="p", query="tea", mode=SearchMode.SEMANTIC))
    assert result.mode is SearchMode.SEMANTIC and result.notes == []
    assert result.hits[0].memory.content == "green tea in the morning"
    assert result.hits[0].signals.vector_rank == 1 and result.hits[0].signals.bm25_rank is None


async def test_hybrid_reports_both_ranks(semantic: tuple[MemoryService, FakeEmbedder]) -> None:
    service, _ = semantic
    await service.append("p", Layer.EPISODIC, "green tea in the morning")
    await service.append("p", Layer.EPISODIC, "tea")
    result = await service.search(SearchRequest(project="p", query="green tea morning"))
    top = result.hits[0]
    assert result.mode is SearchMode.HYBRID
    assert top.memory.content == "green tea in the morning"
    assert top.signals.bm25_rank == 1 and top.signals.vector_rank == 1
    assert top.signals.relevance == 1.0


async def test_identical_text_is_embedded_once(
    semantic: tuple[MemoryService, FakeEmbedder],
) -> None:
    service, fake = semantic
    await service.append("p", Layer.EPISODIC, "same words")
    await service.append("q", Layer.EPISODIC, "same words")  # another project, same text
    embedded = [t for call in fake.calls for t in call]
    assert embedded.count("same words") == 1


async def test_near_duplicates_are_flagged(semantic: tuple[MemoryService, FakeEmbedder]) -> None:
    service, _ = semantic
    first = await service.append("p", Layer.EPISODIC, "Alice likes green tea")
    again = await service.append("p", Layer.EPISODIC, "alice likes GREEN tea!")
    other = await service.append("p", Layer.EPISODIC, "Bob fixed the build")
    assert again.near_duplicate is not None and again.near_duplicate.id == first.outcome.memory.id
    assert again.near_duplicate.similarity >= 0.95
    assert other.near_duplicate is None
    elsewhere = await service.append("p", Layer.WORKING, "Alice likes green tea.")
    assert elsewhere.near_duplicate is None  # only the same layer counts


async def test_token_budget_cuts_and_counts(semantic: tuple[MemoryService, FakeEmbedder]) -> None:
    service, _ = semantic
    for i in range(4):
        await service.append("p", Layer.EPISODIC, f"tea note {i} " + "x" * 36)  # 11 tokens each
    result = await service.search(SearchRequest(project="p", query="tea", token_budget=25))
    assert len(result.hits) == 2 and result.omitted == 2
    ctx = await service.load_context("p", token_budget=12)
    assert len(ctx.items) == 1 and ctx.omitted == 3


async def test_search_before_the_model_is_ready_uses_keywords(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy, _, release = blocked_fake()
    service = await make_service(storage, repo, clock, lazy)
    stored = await service.append("p", Layer.EPISODIC, "written while loading")
    assert stored.near_duplicate is None
    result = await service.search(SearchRequest(project="p", query="loading"))
    assert result.mode is SearchMode.KEYWORD
    assert "still loading" in result.notes[0]
    assert [h.memory.content for h in result.hits] == ["written while loading"]
    release.set()
    embedder = await lazy.wait(5)
    assert service.indexer is not None
    assert await service.indexer.backfill(embedder) == 1
    semantic = await service.search(
        SearchRequest(project="p", query="loading", mode=SearchMode.SEMANTIC)
    )
    assert semantic.mode is SearchMode.SEMANTIC and len(semantic.hits) == 1


async def test_without_an_embedder_search_says_so(service: MemoryService) -> None:
    await service.append("p", Layer.EPISODIC, "plain words")
    result = await service.search(SearchRequest(project="p", query="words"))
    assert result.mode is SearchMode.KEYWORD and "off" in result.notes[0]


async def test_a_failed_model_load_is_reported(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    from memory_core.errors import EmbeddingUnavailableError

    def broken() -> FakeEmbedder:
        raise EmbeddingUnavailableError("model file missing")

    lazy = LazyEmbedder(broken, model_id="x", dims=32)
    with pytest.raises(EmbeddingUnavailableError, match="model file missing"):
        await lazy.wait(5)
    assert lazy.failure == "model file missing" and not lazy.ready
    service = await make_service(storage, repo, clock, lazy)
    await service.append("p", Layer.EPISODIC, "still searchable")
    result = await service.search(SearchRequest(project="p", query="searchable"))
    assert result.mode is SearchMode.KEYWORD and len(result.hits) == 1
    assert "failed to load" in result.notes[0] and "missing" not in result.notes[0]


async def test_concurrent_appends_share_model_calls(
    semantic: tuple[MemoryService, FakeEmbedder],
) -> None:
    import asyncio

    service, fake = semantic
    results = await asyncio.gather(
        *(service.append("p", Layer.EPISODIC, f"concurrent note {i}") for i in range(12))
    )
    assert len({r.outcome.memory.id for r in results}) == 12
    assert sum(len(c) for c in fake.calls) == 12
    assert len(fake.calls) < 12  # later arrivals joined a batch
    hits = await service.search(
        SearchRequest(project="p", query="concurrent note 7", mode=SearchMode.SEMANTIC)
    )
    assert hits.hits[0].memory.content == "concurrent note 7"


async def test_neighbours_come_from_stored_vectors_without_marking_used(
    semantic: tuple[MemoryService, FakeEmbedder],
) -> None:
    service, fake = semantic
    tea = (await service.append("p", Layer.EPISODIC, "green tea in the morning")).memory
    close = (await service.append("p", Layer.EPISODIC, "green tea in the evening")).memory
    await service.append("p", Layer.EPISODIC, "quarterly budget review")
    await service.append("q", Layer.EPISODIC, "green tea in the morning too")
    calls = len(fake.calls)
    found = await service.neighbours(tea)
    assert [m.id for m, _ in found] == [close.id]
    assert 0 < found[0][1] <= 1
    assert found[0][0].access_count == 0
    assert len(fake.calls) == calls  # the stored vector was used, not the model
    keyword_only = MemoryService(
        repo=service.repo,
        clock=service.clock,
        limits=service.limits,
        tiers=service.tiers,
        ranking=service.ranking,
    )
    assert await keyword_only.neighbours(tea) == []


class _KeywordHalf:
    """A keyword reader that waits for the vector half the first time, then answers at once."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo
        self.vectors_done = asyncio.Event()
        self.answer: list[TextMatch] | None = None

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        if self.answer is None:
            await self.vectors_done.wait()  # still running when the vector matches are known
            self.answer = await self.repo.search_text(query)
        return self.answer  # no await: done before the query's embedding comes back


async def test_vector_rows_read_while_the_keyword_half_runs_rank_the_same(
    storage: StorageUnderTest,
    repo: MemoryRepository,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lazy, _ = ready_fake()
    plain = await make_service(storage, repo, clock, lazy)
    keyword_half = _KeywordHalf(repo)
    service = dataclasses.replace(plain, keyword_reader=keyword_half)
    for text in ("green tea in the morning", "tea", "black tea at night", "coffee", "green"):
        await service.append("p", Layer.EPISODIC, text)
    read: list[list[int]] = []
    get_many = repo.get_many

    async def spy(project: str, ids: Sequence[int], query: TextQuery) -> list[Memory]:
        read.append(list(ids))
        return await get_many(project, ids, query)

    monkeypatch.setattr(repo, "get_many", spy)
    assert service.indexer is not None
    vectors = service.indexer.vectors
    search_vectors = vectors.search_vectors

    async def then_release(*args: Any, **kwargs: Any) -> list[VectorMatch]:
        matches = await search_vectors(*args, **kwargs)
        keyword_half.vectors_done.set()
        return matches

    monkeypatch.setattr(vectors, "search_vectors", then_release)
    request = SearchRequest(project="p", query="green tea", mark_used=False)
    while_running = await service.search(request)  # the rows are read beside the keyword half
    after = await service.search(request)  # the keyword half was done first
    assert [(h.memory, h.signals) for h in while_running.hits] == [
        (h.memory, h.signals) for h in after.hits
    ]
    keyword_ids = {m.memory.id for m in keyword_half.answer or []}
    assert keyword_ids and set(read[0]) & keyword_ids  # read before the keyword list was known
    assert not set(read[1]) & keyword_ids  # read after: only the rows it had not returned
