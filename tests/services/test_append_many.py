"""Batched appends: one transaction, the same outcomes as appending one by one."""

import pytest

from memory_core.domain.models import Layer, TierCutoffs
from memory_core.errors import InvalidInputError
from memory_core.ports import MemoryRepository
from memory_core.services.memories import (
    APPEND_BATCH_MAX,
    AppendItem,
    AppendResult,
    MemoryService,
    SearchRequest,
)
from tests.backends import StorageUnderTest
from tests.fakes import FakeEmbedder, FrozenClock, ready_fake
from tests.services.test_semantic import make_service

ITEMS = [
    AppendItem(layer=Layer.EPISODIC, content="deployed the billing service"),
    AppendItem(layer=Layer.SEMANTIC, content="Dutch", key="user.language"),
    AppendItem(layer=Layer.EPISODIC, content="reviewed the quarterly budget"),
    AppendItem(layer=Layer.EPISODIC, content="deployed the billing service"),  # repeats item 0
    AppendItem(layer=Layer.SEMANTIC, content="English", key="user.language"),  # updates item 1
    AppendItem(layer=Layer.SEMANTIC, content="English", key="user.language"),  # unchanged
    AppendItem(layer=Layer.PROCEDURAL, content="run the tests", key="before a release"),
    AppendItem(layer=Layer.WORKING, content="scratch", session_id="s1"),
    AppendItem(layer=Layer.WORKING, content="scratch", session_id="s2"),  # other session: new
    AppendItem(layer=Layer.EPISODIC, content="stored before", metadata={"source": "import"}),
]


def shape(results: list[AppendResult]) -> list[tuple[object, ...]]:
    return [
        (r.status, r.memory.layer, r.memory.key, r.memory.content, r.memory.session_id)
        for r in results
    ]


async def test_append_many_matches_appending_one_by_one(service: MemoryService) -> None:
    for project in ("one", "batch"):
        await service.append(project, Layer.EPISODIC, "stored before")
    singles = [
        await service.append(
            "one", i.layer, i.content, key=i.key, metadata=i.metadata, session_id=i.session_id
        )
        for i in ITEMS
    ]
    batched = await service.append_many("batch", ITEMS)
    assert shape(batched) == shape(singles)
    assert [r.status for r in batched] == [
        "created",
        "created",
        "created",
        "duplicate",
        "updated",
        "unchanged",
        "created",
        "created",
        "created",
        "duplicate",
    ]
    assert batched[3].memory.id == batched[0].memory.id
    assert batched[4].previous_content == "Dutch"
    assert batched[9].memory.metadata == {"source": "import"}  # merged, as for one append
    one = await service.repo.stats("one", _cutoffs(service))
    many = await service.repo.stats("batch", _cutoffs(service))
    assert (one.total, one.by_layer) == (many.total, many.by_layer)


def _cutoffs(service: MemoryService) -> TierCutoffs:
    from memory_core.domain.tiers import tier_cutoffs

    return tier_cutoffs(service.clock.now(), service.tiers)


async def test_append_many_rows_are_found_by_search(service: MemoryService) -> None:
    await service.append_many("p", ITEMS)
    result = await service.search(SearchRequest(project="p", query="billing", limit=5))
    assert [h.memory.content for h in result.hits] == ["deployed the billing service"]


async def test_append_many_bad_item_writes_nothing(service: MemoryService) -> None:
    bad = [*ITEMS[:2], AppendItem(layer=Layer.EPISODIC, content="  ")]
    with pytest.raises(InvalidInputError) as info:
        await service.append_many("p", bad)
    assert info.value.field == "items[2].content"
    with pytest.raises(InvalidInputError) as info:
        await service.append_many("p", [AppendItem(layer=Layer.SEMANTIC, content="no key")])
    assert info.value.field == "items[0].key"
    assert await service.repo.projects() == []


@pytest.mark.parametrize("count", [0, APPEND_BATCH_MAX + 1])
async def test_append_many_bounds_the_batch(service: MemoryService, count: int) -> None:
    items = [AppendItem(layer=Layer.EPISODIC, content=f"note {i}") for i in range(count)]
    with pytest.raises(InvalidInputError) as info:
        await service.append_many("p", items)
    assert info.value.field == "items"


async def test_append_many_caps_the_working_layer(service: MemoryService) -> None:
    items = [
        AppendItem(layer=Layer.WORKING, content=f"note {i}", session_id="s1") for i in range(7)
    ]
    results = await service.append_many("p", items)
    assert {r.trimmed for r in results} == {2}  # cap is 5 in the test limits
    kept = await service.repo.list_layer("p", Layer.WORKING, "s1", newest_first=False)
    assert [m.content for m in kept] == [f"note {i}" for i in range(2, 7)]


async def test_append_many_redacts_like_append(service: MemoryService) -> None:
    secret = "key sk-ant-api03-" + "Ab3_" * 20
    [result] = await service.append_many("p", [AppendItem(layer=Layer.EPISODIC, content=secret)])
    single = await service.append("q", Layer.EPISODIC, secret)
    assert result.memory.content == single.memory.content
    assert result.redacted == single.redacted


async def test_append_many_embeds_the_batch_in_one_call(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> None:
    lazy, fake = ready_fake()
    service = await make_service(storage, repo, clock, lazy)
    items = [AppendItem(layer=Layer.EPISODIC, content=f"green tea number {i}") for i in range(5)]
    fake.calls.clear()
    results = await service.append_many("p", items)
    assert len(fake.calls) == 1 and len(fake.calls[0]) == 5
    assert service.indexer is not None
    assert await service.indexer.vectors.vector_stats() == (5, 0)
    hit = await service.search(SearchRequest(project="p", query="green tea number 3"))
    assert hit.hits[0].memory.id == results[3].memory.id


def test_fake_embedder_is_deterministic() -> None:
    assert (FakeEmbedder().embed(["a b"]) == FakeEmbedder().embed(["a b"])).all()


async def test_append_many_is_one_transaction(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure on the last draft (after the bulk insert) leaves nothing behind."""
    repo = service.repo
    original = repo._add_in_transaction  # type: ignore[attr-defined]

    async def fail_on_rules(db, draft, now):
        if draft.layer is Layer.PROCEDURAL:
            raise RuntimeError("disk on fire")
        return await original(db, draft, now)

    monkeypatch.setattr(repo, "_add_in_transaction", fail_on_rules)
    with pytest.raises(RuntimeError):
        await service.append_many("p", ITEMS)
    monkeypatch.undo()
    assert await repo.projects() == []
    # The connection is usable again afterwards.
    assert (await service.append_many("p", ITEMS[:1]))[0].status == "created"
