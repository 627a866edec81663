"""Contract tests of the MemoryRepository port (parametrized over backends by the repo fixture)."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery, Tier
from memory_core.domain.tiers import classify_tier, handed_out, tier_cutoffs
from memory_core.ports import MemoryRepository
from tests.backends import StorageUnderTest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
POLICY = TierPolicy()


def draft(content: str, layer: Layer = Layer.EPISODIC, project: str = "p", **kw: object):
    return MemoryDraft(
        project=project,
        layer=layer,
        content=content,
        content_hash=content_hash(content),
        token_count=1,
        **kw,
    )


async def test_add_assigns_id_and_timestamps(repo: MemoryRepository) -> None:
    out = await repo.add(draft("hello", metadata={"a": [1, 2]}), T0)
    m = out.memory
    assert out.status == "created"
    assert m.id > 0 and m.created_at == T0 and m.last_accessed is None
    assert m.tier is Tier.ACTIVE and m.access_count == 0 and m.metadata == {"a": [1, 2]}
    assert await repo.get("p", m.id) == m


async def test_identical_unkeyed_content_returns_the_existing_row(repo: MemoryRepository) -> None:
    first = await repo.add(draft("same"), T0)
    again = await repo.add(draft("same"), T0 + timedelta(hours=2))
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    assert again.memory.last_accessed == T0 + timedelta(hours=2)
    other_layer = await repo.add(draft("same", layer=Layer.WORKING), T0)
    other_project = await repo.add(draft("same", project="q"), T0)
    assert len({first.memory.id, other_layer.memory.id, other_project.memory.id}) == 3


async def test_keyed_add_upserts_and_reports_the_previous_content(repo: MemoryRepository) -> None:
    first = await repo.add(draft("Dutch", layer=Layer.SEMANTIC, key="lang"), T0)
    same = await repo.add(draft("Dutch", layer=Layer.SEMANTIC, key="lang"), T0)
    changed = await repo.add(draft("Frisian", layer=Layer.SEMANTIC, key="lang"), T0)
    assert same.status == "unchanged"
    assert changed.status == "updated" and changed.previous_content == "Dutch"
    assert changed.memory.id == first.memory.id and changed.memory.content == "Frisian"
    stored = await repo.get_by_key("p", Layer.SEMANTIC, "lang")
    assert stored is not None and stored.content == "Frisian"


async def test_hand_out_updates_access_fields_in_order(repo: MemoryRepository) -> None:
    a = (await repo.add(draft("a"), T0)).memory
    b = (await repo.add(draft("b"), T0)).memory
    await repo.recalculate_tiers(tier_cutoffs(T0 + timedelta(days=2), POLICY), None)
    at = T0 + timedelta(days=2)
    handed = await repo.hand_out("p", [b.id, a.id, 9999], at)
    assert [m.id for m in handed] == [b.id, a.id]
    assert all(m.access_count == 1 and m.last_accessed == at for m in handed)
    assert all(m.tier is Tier.ACTIVE for m in handed)
    assert await repo.hand_out("other", [a.id], at) == []


async def test_a_use_recorded_late_never_moves_the_last_access_back(
    repo: MemoryRepository,
) -> None:
    a = (await repo.add(draft("a"), T0)).memory
    await repo.hand_out("p", [a.id], T0 + timedelta(days=2))
    (late,) = await repo.hand_out("p", [a.id], T0 + timedelta(days=1))
    assert late.access_count == 2 and late.last_accessed == T0 + timedelta(days=2)


async def test_record_access_leaves_rows_as_handed_out_computes_them(
    repo: MemoryRepository,
) -> None:
    # A search records its hits' use without reading them back (services.access_recording.
    # hand_out_read): domain.tiers.handed_out must say what the store then holds.
    a = (await repo.add(draft("a"), T0)).memory
    b = (await repo.add(draft("b"), T0)).memory
    await repo.hand_out("p", [b.id], T0 + timedelta(days=3))
    await repo.recalculate_tiers(tier_cutoffs(T0 + timedelta(days=4), POLICY), None)
    rows = [m for m in [await repo.get("p", a.id), await repo.get("p", b.id)] if m is not None]
    at = T0 + timedelta(days=2)  # after a's creation, before b's last use
    await repo.record_access("p", [a.id, b.id], at)
    await repo.record_access("other", [a.id], at)  # another project's rows are not touched
    assert [await repo.get("p", m.id) for m in rows] == [handed_out(m, at) for m in rows]
    assert [m.access_count for m in [handed_out(m, at) for m in rows]] == [1, 2]


async def test_rows_of_another_project_are_invisible(repo: MemoryRepository) -> None:
    mine = (await repo.add(draft("alpha secret", project="mine"), T0)).memory
    assert await repo.get("theirs", mine.id) is None
    assert await repo.delete("theirs", [mine.id]) == 0
    q = TextQuery(project="theirs", words=("alpha",), limit=10)
    assert await repo.search_text(q) == []
    assert await repo.list_recent("theirs", None, limit=10) == []


async def test_search_text_ranks_and_filters(repo: MemoryRepository) -> None:
    await repo.add(draft("green tea in the morning"), T0)
    await repo.add(draft("tea"), T0 + timedelta(days=1))
    await repo.add(draft("coffee", layer=Layer.WORKING), T0)
    hits = await repo.search_text(TextQuery(project="p", words=("tea",), limit=10))
    assert [h.memory.content for h in hits] == ["tea", "green tea in the morning"]
    assert hits[0].bm25 <= hits[1].bm25 < 0
    since = await repo.search_text(
        TextQuery(project="p", words=("tea",), since=T0 + timedelta(hours=1), limit=10)
    )
    assert [h.memory.content for h in since] == ["tea"]
    layer = await repo.search_text(
        TextQuery(project="p", words=("tea", "coffee"), layer=Layer.WORKING, limit=10)
    )
    assert [h.memory.content for h in layer] == ["coffee"]


async def test_fts_index_follows_updates_and_deletes(repo: MemoryRepository) -> None:
    m = (await repo.add(draft("old words", layer=Layer.SEMANTIC, key="k"), T0)).memory
    await repo.add(draft("new words", layer=Layer.SEMANTIC, key="k"), T0)
    assert await repo.search_text(TextQuery(project="p", words=("old",))) == []
    assert len(await repo.search_text(TextQuery(project="p", words=("new",)))) == 1
    await repo.delete("p", [m.id])
    assert await repo.search_text(TextQuery(project="p", words=("words",))) == []


async def test_trim_session_keeps_the_newest(repo: MemoryRepository) -> None:
    for i in range(6):
        await repo.add(draft(f"w{i}", layer=Layer.WORKING, session_id="s"), T0 + timedelta(i))
    await repo.add(draft("other session", layer=Layer.WORKING, session_id="t"), T0)
    assert await repo.trim_session("p", Layer.WORKING, "s", keep=2) == 4
    kept = await repo.list_layer("p", Layer.WORKING, "s", newest_first=True)
    assert [m.content for m in kept] == ["w5", "w4"]
    assert len(await repo.list_layer("p", Layer.WORKING, "t", newest_first=True)) == 1


async def test_recalculate_matches_the_pure_classifier(repo: MemoryRepository) -> None:
    rng = random.Random(7)
    ids = {}
    for i in range(200):
        age = timedelta(
            seconds=rng.choice(
                [0, 3599, 3600, 86_399, 86_400, 2_591_999, 2_592_000, rng.randrange(0, 90 * 86_400)]
            )
        )
        ids[(await repo.add(draft(f"m{i}"), T0 - age)).memory.id] = T0 - age
    cuts = tier_cutoffs(T0, POLICY)
    changed = await repo.recalculate_tiers(cuts, None)
    assert changed == sum(1 for t in ids.values() if classify_tier(t, cuts) is not Tier.ACTIVE)
    for mid, created in ids.items():
        m = await repo.get("p", mid)
        assert m is not None and m.tier is classify_tier(created, cuts)
    assert await repo.recalculate_tiers(cuts, None) == 0  # idempotent


async def test_recalculate_can_be_scoped_to_a_project(repo: MemoryRepository) -> None:
    await repo.add(draft("a", project="p"), T0)
    await repo.add(draft("b", project="q"), T0)
    cuts = tier_cutoffs(T0 + timedelta(days=2), POLICY)
    assert await repo.recalculate_tiers(cuts, "p") == 1
    assert await repo.recalculate_tiers(cuts, None) == 1


async def test_prune_deletes_only_expired_oldest_first_within_limit(
    repo: MemoryRepository,
) -> None:
    old = [
        (await repo.add(draft(f"old{i}"), T0 - timedelta(days=40 + i))).memory.id for i in range(3)
    ]
    fresh = (await repo.add(draft("fresh"), T0 - timedelta(days=29))).memory.id
    cuts = tier_cutoffs(T0, POLICY)
    dry = await repo.prune_expired(cuts, "p", limit=None, dry_run=True)
    assert dry.dry_run and sorted(dry.ids) == sorted(old)
    assert (await repo.get("p", old[0])) is not None  # a dry run deletes nothing
    first = await repo.prune_expired(cuts, "p", limit=2, dry_run=False)
    assert first.ids == sorted(old[1:])  # the two oldest
    rest = await repo.prune_expired(cuts, "p", limit=None, dry_run=False)
    assert rest.ids == [old[0]]
    assert (await repo.prune_expired(cuts, "p", limit=None, dry_run=False)).ids == []
    assert await repo.get("p", fresh) is not None


async def test_prune_deletes_the_least_accessed_expired_rows_first(
    repo: MemoryRepository, storage: StorageUnderTest
) -> None:
    # The oldest row was read five times before it expired, the newer one never: among
    # expired rows, what was used is the last to go.
    used = (await repo.add(draft("used often"), T0 - timedelta(days=50))).memory.id
    unused = (await repo.add(draft("never read"), T0 - timedelta(days=40))).memory.id
    await storage.execute("UPDATE context_snapshots SET access_count = 5 WHERE id = ?", used)
    cuts = tier_cutoffs(T0, POLICY)
    assert (await repo.prune_expired(cuts, "p", limit=None, dry_run=True)).ids == [unused, used]
    assert (await repo.prune_expired(cuts, "p", limit=1, dry_run=False)).ids == [unused]
    assert await repo.get("p", used) is not None


async def test_prune_never_trusts_a_stale_expired_tier(
    repo: MemoryRepository, storage: StorageUnderTest
) -> None:
    m = (await repo.add(draft("used yesterday"), T0 - timedelta(days=60))).memory
    # Simulate a row marked EXPIRED long ago that was used since by a writer that did not
    # update the tier (an older process, a manual edit).
    await storage.execute(
        "UPDATE context_snapshots SET memory_tier = 'EXPIRED', last_accessed = ? WHERE id = ?",
        T0 - timedelta(days=1),
        m.id,
    )
    out = await repo.prune_expired(tier_cutoffs(T0, POLICY), None, limit=None, dry_run=False)
    assert out.ids == []
    kept = await repo.get("p", m.id)
    assert kept is not None and kept.tier is Tier.ARCHIVED


async def test_stats_counts_live_tiers_and_layers(repo: MemoryRepository) -> None:
    await repo.add(draft("now"), T0)
    await repo.add(draft("old", layer=Layer.WORKING), T0 - timedelta(days=31))
    await repo.add(draft("elsewhere", project="q"), T0)
    s = await repo.stats("p", tier_cutoffs(T0, POLICY))
    assert s.total == 2
    assert s.by_tier[Tier.ACTIVE] == 1 and s.by_tier[Tier.EXPIRED] == 1
    assert s.by_layer[Layer.EPISODIC] == 1 and s.by_layer[Layer.WORKING] == 1
    assert s.content_bytes == len("now") + len("old")
    assert s.stale_tiers == 1  # "old" is stored ACTIVE but is EXPIRED by now
    assert s.oldest == T0 - timedelta(days=31) and s.newest == T0
    assert s.database_bytes > 0
    assert await repo.projects() == ["p", "q"]


async def test_replace_with_swaps_rows_atomically(repo: MemoryRepository) -> None:
    a = (await repo.add(draft("a"), T0)).memory
    b = (await repo.add(draft("b"), T0)).memory
    new = await repo.replace_with(
        "p", [a.id, b.id], [draft("[Summary 1]"), draft("[Summary 2]")], T0
    )
    remaining = await repo.list_layer("p", Layer.EPISODIC, None, newest_first=False)
    assert [m.id for m in remaining] == [m.id for m in new]
    assert [m.content for m in remaining] == ["[Summary 1]", "[Summary 2]"]


async def test_replace_with_rolls_back_the_deletes_on_failure(
    repo: MemoryRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = (await repo.add(draft("a"), T0)).memory

    async def broken(*_: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(type(repo), "_add_in_transaction", broken)
    with pytest.raises(RuntimeError):
        await repo.replace_with("p", [a.id], [draft("[Summary]")], T0)
    assert await repo.get("p", a.id) is not None


async def test_delete_layer_and_whole_project(repo: MemoryRepository) -> None:
    await repo.add(draft("a"), T0)
    await repo.add(draft("b", layer=Layer.WORKING), T0)
    await repo.add(draft("c", project="q"), T0)
    assert await repo.delete_layer("p", Layer.WORKING) == 1
    assert await repo.delete_layer("p", None) == 1
    assert await repo.projects() == ["q"]


@pytest.mark.parametrize("layer", list(Layer))
async def test_list_recent_orders_by_last_use(repo: MemoryRepository, layer: Layer) -> None:
    a = (
        await repo.add(
            draft(
                "a", layer=layer, key="ka" if layer.value in ("semantic", "procedural") else None
            ),
            T0,
        )
    ).memory
    b = (
        await repo.add(
            draft(
                "b", layer=layer, key="kb" if layer.value in ("semantic", "procedural") else None
            ),
            T0 + timedelta(1),
        )
    ).memory
    await repo.hand_out("p", [a.id], T0 + timedelta(2))
    assert [m.id for m in await repo.list_recent("p", layer, limit=10)] == [a.id, b.id]
