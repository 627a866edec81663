"""What the dashboard reads through the services: browse, peek, unmarked search, use ages.

Each runs on both backends (the `service` fixture); none of them may mark a memory as used,
because a person looking at the dashboard must not keep memories from ageing.
"""

import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import BrowseQuery, Layer, SearchMode, Tier
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.services import maintenance
from memory_core.services.memories import MemoryService, SearchRequest
from tests.fakes import FrozenClock

POLICY = TierPolicy()


async def _aged(service: MemoryService, clock: FrozenClock) -> dict[str, int]:
    """Four memories of project p, one per live tier, plus one in project q."""
    ids = {}
    ids["expired"] = (await service.append("p", Layer.EPISODIC, "expired one")).memory.id
    clock.advance(days=29)
    ids["archived"] = (await service.append("p", Layer.EPISODIC, "archived one")).memory.id
    clock.advance(days=2)
    ids["recent"] = (
        await service.append("p", Layer.WORKING, "recent one", session_id="s1")
    ).memory.id
    clock.advance(hours=3)
    ids["active"] = (await service.learn("p", "colour", "active one is blue")).memory.id
    clock.advance(minutes=10)
    await service.append("q", Layer.EPISODIC, "other project")
    return ids


async def test_browse_filters_by_live_tier_layer_and_session(
    service: MemoryService, clock: FrozenClock
) -> None:
    ids = await _aged(service, clock)
    every = await service.browse(BrowseQuery(project="p"))
    assert [m.id for m in every] == sorted(ids.values(), reverse=True)
    for tier in Tier:
        found = await service.browse(BrowseQuery(project="p", tier=tier))
        assert [m.id for m in found] == [ids[tier.value.lower()]], tier
    layer = await service.browse(BrowseQuery(project="p", layer=Layer.EPISODIC))
    assert [m.id for m in layer] == [ids["archived"], ids["expired"]]
    session = await service.browse(BrowseQuery(project="p", session_id="s1"))
    assert [m.id for m in session] == [ids["recent"]]
    page = await service.browse(BrowseQuery(project="p", limit=2, before_id=ids["recent"]))
    assert [m.id for m in page] == [ids["archived"], ids["expired"]]
    # The counts agree with the stats, which the overview shows next to the list.
    stats = (await maintenance.memory_stats(service.repo, clock, POLICY, "p")).stats
    assert all(stats.by_tier[t] == 1 for t in Tier)
    # Browsing marked nothing as used: the expired row is still expired.
    row = await service.repo.get("p", ids["expired"])
    assert row is not None and row.access_count == 0 and row.last_accessed is None


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (BrowseQuery(project="p", limit=0), "limit"),
        (BrowseQuery(project="p", before_id=0), "before_id"),
        (BrowseQuery(project="", limit=5), "project"),
        (BrowseQuery(project="p", session_id=""), "session_id"),
    ],
)
async def test_browse_names_a_bad_field(
    service: MemoryService, query: BrowseQuery, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await service.browse(query)
    assert caught.value.field == field


async def test_peek_reads_without_marking_used(service: MemoryService) -> None:
    stored = (await service.append("p", Layer.EPISODIC, "looked at")).memory
    seen = await service.peek("p", stored.id)
    assert seen.content == "looked at" and seen.access_count == 0
    again = await service.peek("p", stored.id)
    assert again.access_count == 0 and again.last_accessed is None
    with pytest.raises(MemoryNotFoundError):
        await service.peek("q", stored.id)
    with pytest.raises(MemoryNotFoundError):
        await service.peek("p", 2**70)


async def test_search_without_mark_used_leaves_access_fields(
    service: MemoryService, clock: FrozenClock
) -> None:
    stored = (await service.append("p", Layer.EPISODIC, "the deploy runbook")).memory
    clock.advance(days=40)
    request = SearchRequest(
        project="p", query="deploy runbook", mode=SearchMode.KEYWORD, mark_used=False
    )
    result = await service.search(request)
    assert [h.memory.id for h in result.hits] == [stored.id]
    assert result.hits[0].signals.tier is Tier.EXPIRED
    assert result.hits[0].signals.bm25_rank == 1
    row = await service.repo.get("p", stored.id)
    assert row is not None and row.access_count == 0
    # The default still marks hits as used (the tools' behaviour).
    await service.search(request.model_copy(update={"mark_used": True}))
    row = await service.repo.get("p", stored.id)
    assert row is not None and row.access_count == 1


async def test_use_ages_counts_each_day_and_caps_the_oldest(
    service: MemoryService, clock: FrozenClock
) -> None:
    await service.append("p", Layer.EPISODIC, "ninety days old")
    clock.advance(days=80)
    await service.append("p", Layer.EPISODIC, "ten days old")
    clock.advance(days=7)
    await service.append("p", Layer.EPISODIC, "three days old a")
    await service.append("p", Layer.EPISODIC, "three days old b")
    clock.advance(days=3, hours=1)
    await service.append("p", Layer.EPISODIC, "now")
    await service.append("q", Layer.EPISODIC, "other project")
    ages = await maintenance.use_ages(service.repo, clock, "p", max_days=30)
    assert len(ages) == 31
    assert {d: n for d, n in ages.items() if n} == {0: 1, 3: 2, 10: 1, 30: 1}
    with pytest.raises(InvalidInputError) as caught:
        await maintenance.use_ages(service.repo, clock, "p", max_days=0)
    assert caught.value.field == "max_days"
