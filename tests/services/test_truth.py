"""One truth per fact, points 2-6: supersede, update with history, newest first, pins, tags,
listing without side effects and forget with a receipt (both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import BrowseQuery, Layer, SearchMode
from memory_core.domain.tiers import tier_cutoffs
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.ports import MemoryRepository
from memory_core.services import transfer
from memory_core.services.memories import MemoryService, SearchRequest
from memory_core.services.truth import TruthService
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock, ready_fake
from tests.services.test_duplicates_at_write import _transfer
from tests.services.test_semantic import make_service


@pytest.fixture
async def service(
    storage: StorageUnderTest, repo: MemoryRepository, clock: FrozenClock
) -> MemoryService:
    lazy, _ = ready_fake()
    return await make_service(storage, repo, clock, lazy)


@pytest.fixture
def truth(service: MemoryService) -> TruthService:
    return TruthService(service)


async def _ids(service: MemoryService, query: str, **extra: object) -> list[int]:
    request = SearchRequest(project="p", query=query, mode=SearchMode.KEYWORD, **extra)
    return [h.memory.id for h in (await service.search(request)).hits]


async def test_a_superseded_memory_is_history_until_its_successor_goes(
    service: MemoryService, repo: MemoryRepository, clock: FrozenClock
) -> None:
    old = (await service.append("p", Layer.EPISODIC, "We deploy the backend to Fly.io")).memory
    clock.advance(minutes=1)
    new = await service.append(
        "p", Layer.EPISODIC, "We moved the backend deploys to AWS", supersedes=[old.id]
    )
    assert await _ids(service, "backend") == [new.memory.id]
    assert sorted(await _ids(service, "backend", include_superseded=True)) == [
        old.id,
        new.memory.id,
    ]
    recent = await service.load_context("p", limit=10)
    assert [i.memory.id for i in recent.items] == [new.memory.id]
    stored = await repo.get("p", old.id)
    assert stored is not None and stored.superseded_by == new.memory.id
    stats = await repo.stats("p", tier_cutoffs(clock.now(), TierPolicy()))
    assert (stats.total, stats.superseded) == (2, 1)
    # Forgetting the correction makes the older fact current again.
    await service.forget("p", new.memory.id)
    assert await _ids(service, "backend") == [old.id]


async def test_a_close_memory_that_differs_is_named_as_a_candidate(
    service: MemoryService,
) -> None:
    old = (await service.append("p", Layer.EPISODIC, "We deploy the backend to Fly.io")).memory
    new = await service.append("p", Layer.EPISODIC, "We deploy the backend to AWS")
    assert new.status == "created"
    assert [c.memory.id for c in new.candidates] == [old.id]
    assert new.candidates[0].resemblance.differs_in == "name"
    # The client confirms with one call: the same text again, with `supersedes`.
    again = await service.append(
        "p", Layer.EPISODIC, "We deploy the backend to AWS", supersedes=[old.id]
    )
    assert again.status == "duplicate" and again.memory.id == new.memory.id
    assert await _ids(service, "backend") == [new.memory.id]


async def test_an_update_keeps_the_previous_version_and_is_found_by_its_new_words(
    service: MemoryService, truth: TruthService, clock: FrozenClock
) -> None:
    memory = (
        await service.append("p", Layer.EPISODIC, "The API listens on port 8080", tags=["api"])
    ).memory
    other = (await service.append("p", Layer.EPISODIC, "Staging runs Postgres 16")).memory
    clock.advance(minutes=5)
    result = await truth.update(
        "p", memory.id, content="The gateway listens on port 9090", tags=["api", "infra"]
    )
    assert result.memory is not None and result.changed == ["content", "tags"]
    assert result.memory.content == "The gateway listens on port 9090"
    assert result.memory.tags == ("api", "infra")
    assert await _ids(service, "gateway") == [memory.id]
    found = await service.search(
        SearchRequest(project="p", query="gateway port", mode=SearchMode.SEMANTIC)
    )
    assert found.hits[0].memory.id == memory.id  # re-embedded
    (version,) = await truth.history("p", memory.id)
    assert (version.content, version.tags, version.change) == (
        "The API listens on port 8080",
        ("api",),
        "update",
    )
    twin = await truth.update("p", memory.id, content="staging runs postgres 16")
    assert twin.duplicate_of is not None and twin.duplicate_of.id == other.id
    with pytest.raises(MemoryNotFoundError):
        await truth.update("p", 999_999, content="x")
    with pytest.raises(InvalidInputError):
        await truth.update("p", memory.id)


async def test_learn_on_an_existing_key_keeps_its_history(
    service: MemoryService, truth: TruthService
) -> None:
    first = await service.learn("p", "deploy.target", "Fly.io")
    await service.learn("p", "deploy.target", "AWS")
    assert (await service.recall("p", "deploy.target")).value.content == "AWS"  # type: ignore[union-attr]
    assert [v.content for v in await truth.history("p", first.memory.id)] == ["Fly.io"]


async def test_newest_first_within_a_cluster_of_versions(
    service: MemoryService, clock: FrozenClock
) -> None:
    old = await service.append(
        "p", Layer.EPISODIC, "The auth service JWTs expire after 15 minutes for all users"
    )
    clock.advance(days=1)
    new = await service.append(
        "p", Layer.EPISODIC, "The auth service JWTs expire after 60 minutes for all users"
    )
    assert new.status == "created" and old.memory.id in [c.memory.id for c in new.candidates]
    result = await service.search(SearchRequest(project="p", query="when do JWTs expire"))
    assert [h.memory.id for h in result.hits] == [new.memory.id]
    assert result.folded == {new.memory.id: 1}


async def test_pinned_memories_are_never_pruned_and_are_counted(
    service: MemoryService, truth: TruthService, repo: MemoryRepository, clock: FrozenClock
) -> None:
    keep = (await service.append("p", Layer.EPISODIC, "Never force-push to main")).memory
    drop = (await service.append("p", Layer.EPISODIC, "scratch note about lunch")).memory
    other = (await service.append("p", Layer.EPISODIC, "another scratch note")).memory
    pinned = await truth.pin("p", [keep.id, other.id])
    assert all(m.pinned for m in pinned)
    assert not (await truth.pin("p", [other.id], pinned=False))[0].pinned
    clock.advance(days=400)
    cutoffs = tier_cutoffs(clock.now(), TierPolicy())
    stats = await repo.stats("p", cutoffs)
    assert stats.pinned == 1
    dry = await repo.prune_expired(cutoffs, "p", limit=None, dry_run=True)
    assert sorted(dry.ids) == sorted([drop.id, other.id])
    assert await repo.delete_expired([keep.id], cutoffs) == []
    pruned = await repo.prune_expired(cutoffs, "p", limit=None, dry_run=False)
    assert sorted(pruned.ids) == sorted([drop.id, other.id])
    assert await repo.get("p", keep.id) is not None


async def test_tags_filter_search_listing_and_forget(
    service: MemoryService, truth: TruthService, storage: StorageUnderTest
) -> None:
    a = await service.append("p", Layer.EPISODIC, "billing retries webhooks", tags=["Billing"])
    b = await service.append("p", Layer.EPISODIC, "billing exports CSV", tags=["billing", "ops"])
    await service.append("p", Layer.EPISODIC, "billing is owned by Alice")
    assert a.memory.tags == ("billing",)
    assert sorted(await _ids(service, "billing", tags=("billing",))) == sorted(
        [a.memory.id, b.memory.id]
    )
    assert await _ids(service, "billing", tags=("billing", "ops")) == [b.memory.id]
    page, _ = await truth.list_memories(BrowseQuery(project="p", tags=("ops",)))
    assert [m.id for m in page] == [b.memory.id]
    receipt = await truth.forget(BrowseQuery(project="p", tags=("billing",)), dry_run=False)
    assert receipt.rows == 2 and receipt.tags == 3
    assert set(receipt.remaining.values()) == {0}
    assert (
        await storage.fetchval("SELECT count(*) FROM context_snapshots WHERE project = ?", "p") == 1
    )


async def test_listing_pages_are_stable_under_writes_and_mark_nothing_used(
    service: MemoryService, truth: TruthService
) -> None:
    ids = [
        (await service.append("p", Layer.EPISODIC, f"note number {n}")).memory.id for n in range(5)
    ]
    first, cursor = await truth.list_memories(BrowseQuery(project="p", limit=2))
    assert [m.id for m in first] == ids[:2:-1][:2] and cursor == ids[3]
    # Writes between two pages: new ids, above the first page; the next page is unmoved.
    for n in range(3):
        await service.append("p", Layer.EPISODIC, f"written while paging {n}")
    second, cursor = await truth.list_memories(BrowseQuery(project="p", limit=2, before_id=cursor))
    assert [m.id for m in second] == [ids[2], ids[1]]
    last, cursor = await truth.list_memories(BrowseQuery(project="p", limit=2, before_id=cursor))
    assert [m.id for m in last] == [ids[0]] and cursor is None
    assert all(m.access_count == 0 and m.last_accessed is None for m in first + second + last)


async def test_forget_previews_then_deletes_everywhere_with_a_receipt(
    service: MemoryService, truth: TruthService, storage: StorageUnderTest
) -> None:
    m1 = (await service.append("p", Layer.EPISODIC, "old deploy notes one", tags=["deploy"])).memory
    m2 = (await service.append("p", Layer.EPISODIC, "old deploy notes two")).memory
    keep = (await service.append("p", Layer.EPISODIC, "keep this one")).memory
    await truth.update("p", m1.id, content="old deploy notes one, revised")
    query = BrowseQuery(project="p", ids=(m1.id, m2.id))
    preview = await truth.forget(query)
    assert preview.dry_run and preview.rows == 2 and len(preview.sample) == 2
    assert (preview.vectors, preview.versions, preview.tags) == (2, 1, 1)
    assert (
        await storage.fetchval("SELECT count(*) FROM context_snapshots WHERE project = ?", "p") == 3
    )
    receipt = await truth.forget(query, dry_run=False)
    assert sorted(receipt.ids) == sorted([m1.id, m2.id])
    assert (receipt.rows, receipt.vectors, receipt.keyword_entries, receipt.versions) == (
        2,
        2,
        2,
        1,
    )
    assert receipt.remaining == {
        "rows": 0,
        "vectors": 0,
        "versions": 0,
        "tags": 0,
        "keyword_entries": 0,
    } or set(receipt.remaining.values()) == {0}
    # Checked against the database itself.
    for sql in (
        "SELECT count(*) FROM context_snapshots WHERE id IN (?, ?)",
        "SELECT count(*) FROM context_embeddings WHERE id IN (?, ?)",
        "SELECT count(*) FROM memory_versions WHERE memory_id IN (?, ?)",
    ):
        assert await storage.fetchval(sql, m1.id, m2.id) == 0
    assert await _ids(service, "deploy notes") == []
    assert await _ids(service, "keep") == [keep.id]
    with pytest.raises(InvalidInputError):
        await truth.forget(BrowseQuery(project="p"))


async def test_history_pins_tags_and_supersession_survive_export_and_import(
    service: MemoryService,
    truth: TruthService,
    repo: MemoryRepository,
    storage: StorageUnderTest,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    old = (
        await service.append("p", Layer.EPISODIC, "Deploys go to Fly.io", tags=["deploy"])
    ).memory
    new = (
        await service.append("p", Layer.EPISODIC, "Deploys go to AWS now", supersedes=[old.id])
    ).memory
    await truth.update("p", new.id, content="Deploys go to AWS (eu-west-1)")
    await truth.pin("p", [new.id])
    before = {
        m.id: m
        for m in await repo.browse(
            BrowseQuery(project="p"), tier_cutoffs(clock.now(), TierPolicy())
        )
    }
    history = await truth.history("p", new.id)
    store = _transfer(storage, tmp_path)
    lines = [line async for line in transfer.export_lines(store, clock)]
    await repo.delete("p", list(before))
    assert await storage.fetchval("SELECT count(*) FROM memory_versions") == 0
    parsed = transfer.parse_export(
        lines, schema_version=await store.schema_version(), now=clock.now()
    )
    counts = await transfer.import_records(store, parsed)
    assert counts.stores["memory_version"]["imported"] == 1
    after = {
        m.id: m
        for m in await repo.browse(
            BrowseQuery(project="p"), tier_cutoffs(clock.now(), TierPolicy())
        )
    }
    assert after == before
    assert await truth.history("p", new.id) == history
    assert (after[old.id].superseded_by, after[new.id].pinned) == (new.id, True)
    assert after[old.id].tags == ("deploy",)
    # Imported twice: nothing new (identities and ids are stored).
    again = await transfer.import_records(store, parsed)
    assert again.imported == 0


async def test_a_superseded_rule_no_longer_applies(service: MemoryService) -> None:
    old = await service.append(
        "p", Layer.PROCEDURAL, "run make deploy-fly", key="deploying the backend"
    )
    new = await service.append(
        "p",
        Layer.PROCEDURAL,
        "run make deploy-aws",
        key="deploying the backend to production",
        supersedes=[old.memory.id],
    )
    for key in ("deploying the backend", "deploying the backend to production"):
        rules = (await service.recall("p", key)).rules
        assert [r.id for r in rules] == [new.memory.id], key


async def test_a_keyword_search_without_the_model_still_knows_the_newer_version(
    service: MemoryService, clock: FrozenClock
) -> None:
    """The prompt hook's cold search (no indexer) orders versions by the stored vectors, and
    with `versions` names the older one a newer close hit follows (the hook leaves it out)."""
    import dataclasses

    old = await service.append(
        "p", Layer.EPISODIC, "We deploy the staging backend to Fly.io in Frankfurt"
    )
    clock.advance(days=1)
    new = await service.append(
        "p", Layer.EPISODIC, "We deploy the staging backend to AWS in Frankfurt"
    )
    assert service.indexer is not None
    assert old.memory.id in [c.memory.id for c in new.candidates]
    cold = dataclasses.replace(service, indexer=None, stored_vectors=service.indexer.vectors)
    request = SearchRequest(
        project="p", query="deploy staging backend", mode=SearchMode.KEYWORD, versions=True
    )
    result = await cold.search(request)
    assert [h.memory.id for h in result.hits] == [new.memory.id, old.memory.id]
    assert result.older == {old.memory.id: new.memory.id}
    plain = await cold.search(request.model_copy(update={"versions": False}))
    assert plain.older == {}
    blind = await dataclasses.replace(cold, stored_vectors=None).search(request)
    assert blind.older == {}
