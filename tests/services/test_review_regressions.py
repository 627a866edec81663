"""Regressions for defects found in review: each test failed before its fix."""

import asyncio
from datetime import UTC, datetime

import aiosqlite
import pytest

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, SearchMode
from memory_core.errors import InvalidInputError
from memory_core.ports import MemoryRepository, VectorIndex
from memory_core.services.indexing import Indexer, embedding_text
from memory_core.services.memories import MemoryService, SearchRequest
from memory_core.storage.sqlite import SqliteSession, SqliteVectorIndex, open_database
from memory_core.storage.sqlite.rows import encode_time
from server.settings import Settings
from tests.backends import StorageUnderTest
from tests.fakes import FakeEmbedder, FrozenClock, ready_fake


@pytest.fixture
async def semantic(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> tuple[MemoryService, FakeEmbedder, VectorIndex]:
    lazy, fake = ready_fake()
    vectors = storage.vectors()
    await vectors.ensure_model(lazy.model_id, lazy.dims)
    service = MemoryService(
        repo=repo,
        clock=clock,
        limits=Limits(max_content_chars=2_000),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
        indexer=Indexer(vectors=vectors, source=lazy),
    )
    return service, fake, vectors


async def stored_hash(storage: StorageUnderTest, memory_id: int) -> str | None:
    value = await storage.fetchval(
        "SELECT text_hash FROM context_embeddings WHERE id = ?", memory_id
    )
    return None if value is None else str(value)


async def test_concurrent_upserts_of_one_key_all_succeed_with_the_final_vector(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex], storage: StorageUnderTest
) -> None:
    service, _, _ = semantic
    results = await asyncio.gather(
        *(service.learn("p", "user.editor", value) for value in ("vim", "emacs", "helix"))
    )
    final = await service.repo.get_by_key("p", Layer.SEMANTIC, "user.editor")
    assert final is not None and len({r.memory.id for r in results}) == 1
    assert await stored_hash(storage, final.id) == content_hash(embedding_text(final))


async def test_a_vector_of_rewritten_text_is_never_stored(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex], storage: StorageUnderTest
) -> None:
    service, fake, vectors = semantic
    old = (await service.learn("p", "colour", "the sky is blue")).memory
    await service.learn("p", "colour", "grass is green")
    stale = fake.embed([embedding_text(old)])[0]
    await vectors.put_vectors([(old, content_hash(embedding_text(old)), stale)])  # a late backfill
    current = await service.repo.get_by_key("p", Layer.SEMANTIC, "colour")
    assert current is not None
    assert await stored_hash(storage, old.id) == content_hash(embedding_text(current))


async def test_compaction_summaries_get_vectors(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex],
) -> None:
    service, _, vectors = semantic
    for i in range(4):
        await service.append("p", Layer.EPISODIC, f"event {i}")
    await service.compact("p", Layer.EPISODIC, keep_last=1)
    assert service.indexer is not None and service.indexer._backfiller is not None
    await service.indexer._backfiller
    assert await vectors.vector_stats() == (2, 0)


async def test_an_indexing_failure_does_not_fail_the_committed_append(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service, _, vectors = semantic

    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("vector store busy")

    monkeypatch.setattr(type(semantic[2]), "put_vectors", boom)
    result = await service.append("p", Layer.EPISODIC, "kept anyway")
    assert result.outcome.status == "created" and result.near_duplicate is None
    monkeypatch.undo()
    assert service.indexer is not None and service.indexer._backfiller is not None
    await service.indexer._backfiller
    assert await vectors.vector_stats() == (1, 0)


async def test_unrelated_queries_hand_out_nothing(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex],
) -> None:
    service, _, _ = semantic
    for text in ("green tea", "quarterly budget", "release notes"):
        await service.append("p", Layer.EPISODIC, text)
    result = await service.search(
        SearchRequest(project="p", query="zebra migration patterns", mode=SearchMode.SEMANTIC)
    )
    assert result.hits == []


@pytest.mark.parametrize("storage", ["sqlite"], indirect=True)  # sqlite-vec's k cap
async def test_coarse_search_caps_k_for_large_limits(
    repo: MemoryRepository, db: aiosqlite.Connection
) -> None:
    fake = FakeEmbedder()
    coarse = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await coarse.ensure_model(fake.model_id, fake.dims)
    assert await coarse.search_vectors("p", fake.embed(["q"])[0], layer=None, limit=400) == []


async def test_large_compactions_keep_every_entry_in_some_summary(
    service: MemoryService, clock: FrozenClock
) -> None:
    for i in range(301):
        await service.append("p", Layer.EPISODIC, f"event {i} " + "detail " * 30)
        clock.advance(seconds=1)
    result = await service.compact("p", Layer.EPISODIC, keep_last=1)
    assert result.removed == 300 and len(result.summaries) == 6
    text = "\n".join(s.content for s in result.summaries)
    assert all(f"event {i} " in text for i in range(300))


async def test_working_duplicates_are_per_session(service: MemoryService) -> None:
    a = await service.append("p", Layer.WORKING, "same note", session_id="A")
    b = await service.append("p", Layer.WORKING, "same note", session_id="B", metadata={"x": 1})
    assert b.outcome.status == "created" and b.outcome.memory.id != a.outcome.memory.id
    again = await service.append("p", Layer.WORKING, "same note", session_id="B", metadata={"y": 2})
    assert again.outcome.status == "duplicate"
    assert again.outcome.memory.metadata == {"x": 1, "y": 2}


def test_timestamps_sort_as_text_for_any_year() -> None:
    early = encode_time(datetime(900, 1, 1, tzinfo=UTC))
    assert early == "0900-01-01T00:00:00.000000Z" and early < encode_time(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": "bad \ud800 text"}, "content"),
        ({"content": "ok", "metadata": {"k": "\udfff"}}, "metadata"),
    ],
)
async def test_unencodable_text_is_refused(
    service: MemoryService, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        await service.append("p", Layer.EPISODIC, **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


async def test_out_of_range_dates_are_refused(service: MemoryService) -> None:
    from datetime import timedelta, timezone

    since = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
    with pytest.raises(InvalidInputError) as info:
        await service.search(SearchRequest(project="p", query="x", since=since))
    assert info.value.field == "since"


@pytest.mark.parametrize("storage", ["sqlite"], indirect=True)  # SQLite's file write lock
async def test_a_cancelled_write_waiting_for_the_lock_leaves_no_transaction(
    service: MemoryService, settings: Settings
) -> None:
    other = await open_database(settings.db)
    await other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        learn = asyncio.create_task(service.learn("p", "k", "v"))
        await asyncio.sleep(0.2)  # our BEGIN IMMEDIATE is now waiting on busy_timeout
        learn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await learn
    finally:
        await other.execute("ROLLBACK")
        await other.close()
    # The connection holds no orphan transaction: the next write works.
    assert (await service.learn("p", "k", "v2")).status == "created"


async def test_closing_the_indexer_stops_a_running_backfill(
    semantic: tuple[MemoryService, FakeEmbedder, VectorIndex],
) -> None:
    service, _, _ = semantic
    assert service.indexer is not None
    loader = MemoryService(
        repo=service.repo,
        clock=service.clock,
        limits=service.limits,
        tiers=service.tiers,
        ranking=service.ranking,
    )
    for i in range(300):
        await loader.append("p", Layer.EPISODIC, f"row {i}")
    service.indexer.schedule_backfill()
    task = service.indexer._backfiller
    assert task is not None and not task.done()
    await service.indexer.aclose()
    assert task.done()


async def test_closing_fails_an_in_flight_batch_instead_of_hanging(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    import threading

    entered, release = threading.Event(), threading.Event()
    fake = FakeEmbedder()

    class SlowEmbedder(FakeEmbedder):
        def embed(self, texts):
            entered.set()
            release.wait(5)
            return fake.embed(texts)

    from memory_core.embeddings import LazyEmbedder

    lazy = LazyEmbedder(SlowEmbedder, model_id=fake.model_id, dims=fake.dims)
    await lazy.wait(5)
    vectors = storage.vectors()
    await vectors.ensure_model(lazy.model_id, lazy.dims)
    indexer = Indexer(vectors=vectors, source=lazy)
    service = MemoryService(
        repo=repo,
        clock=clock,
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
        indexer=indexer,
    )
    append = asyncio.create_task(service.append("p", Layer.EPISODIC, "in flight"))
    assert await asyncio.to_thread(entered.wait, 5)  # the batch is inside the model now
    await indexer.aclose()
    release.set()
    result = await asyncio.wait_for(append, 5)  # answered, not hung
    assert result.outcome.status == "created" and result.near_duplicate is None
    assert indexer._backfiller is None  # closed: no backfill starts afterwards
    later = await service.append("p", Layer.EPISODIC, "after close")
    assert later.outcome.status == "created"


async def test_a_second_compaction_keeps_the_newest_real_entries(
    service: MemoryService, clock: FrozenClock
) -> None:
    for i in range(120):
        await service.append("p", Layer.EPISODIC, f"event {i}")
        clock.advance(seconds=1)
    await service.compact("p", Layer.EPISODIC, keep_last=10)
    for i in range(120, 125):
        await service.append("p", Layer.EPISODIC, f"event {i}")
        clock.advance(seconds=1)
    second = await service.compact("p", Layer.EPISODIC, keep_last=10)
    rows = await service.repo.list_layer("p", Layer.EPISODIC, None, newest_first=True)
    newest = [m.content for m in rows[:10]]
    assert newest == [f"event {i}" for i in range(124, 114, -1)]
    assert all(s.created_at <= rows[9].created_at for s in second.summaries)


async def test_identical_chunks_get_their_own_summaries(
    service: MemoryService, clock: FrozenClock
) -> None:
    for i in range(100):  # identical first 160 characters, all in the same minute
        await service.append("p", Layer.EPISODIC, "same tool log line " * 12 + str(i))
    result = await service.compact("p", Layer.EPISODIC, keep_last=0)
    assert len({s.id for s in result.summaries}) == 2
