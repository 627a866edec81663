import dataclasses
from datetime import timedelta

import pytest

from memory_core.config.policies import RankingPolicy
from memory_core.domain.match import Match
from memory_core.domain.models import Layer, SearchMode, Tier
from memory_core.errors import (
    ConfirmationRequiredError,
    InvalidInputError,
    InvalidQueryError,
    MemoryNotFoundError,
)
from memory_core.ports import MemoryRepository
from memory_core.services.memories import AppendItem, MemoryService, SearchRequest
from tests.fakes import FrozenClock


async def test_working_layer_is_capped_per_session(service: MemoryService) -> None:
    trimmed = []
    for i in range(7):
        result = await service.append("p", Layer.WORKING, f"note {i}", session_id="s1")
        trimmed.append(result.trimmed)
    await service.append("p", Layer.WORKING, "other session", session_id="s2")
    assert trimmed == [0, 0, 0, 0, 0, 1, 1]  # cap is 5 in the test limits
    kept = await service.repo.list_layer("p", Layer.WORKING, "s1", newest_first=False)
    assert [m.content for m in kept] == [f"note {i}" for i in range(2, 7)]


async def test_semantic_key_may_come_from_metadata(service: MemoryService) -> None:
    out = await service.append("p", Layer.SEMANTIC, "Dutch", metadata={"key": "lang"})
    assert out.outcome.memory.key == "lang"
    with pytest.raises(InvalidInputError) as info:
        await service.append("p", Layer.SEMANTIC, "x", metadata={"key": 3})
    assert info.value.field == "metadata.key"


@pytest.mark.parametrize("layer", [Layer.SEMANTIC, Layer.PROCEDURAL])
async def test_keyed_layers_require_a_key(service: MemoryService, layer: Layer) -> None:
    with pytest.raises(InvalidInputError) as info:
        await service.append("p", layer, "value")
    assert info.value.field == "key"


async def test_unkeyed_layers_refuse_a_key(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="only used by the semantic and procedural"):
        await service.append("p", Layer.EPISODIC, "value", key="k")


async def test_rejected_input_writes_nothing(service: MemoryService) -> None:
    for bad in ["", "x" * 2_001]:
        with pytest.raises(InvalidInputError):
            await service.append("p", Layer.EPISODIC, bad)
    with pytest.raises(InvalidInputError):
        await service.append("p", Layer.EPISODIC, "ok", metadata={"x": "y" * 20_000})
    assert await service.repo.projects() == []


async def test_search_hands_out_only_the_returned_hits(service: MemoryService) -> None:
    ids = [
        (await service.append("p", Layer.EPISODIC, f"tea note {i}")).outcome.memory.id
        for i in range(5)
    ]
    hits = (await service.search(SearchRequest(project="p", query="tea", limit=2))).hits
    assert len(hits) == 2
    assert all(h.memory.access_count == 1 for h in hits)
    untouched = set(ids) - {h.memory.id for h in hits}
    for mid in untouched:
        m = await service.repo.get("p", mid)
        assert m is not None and m.access_count == 0


async def test_search_prefers_recently_used_memories(
    service: MemoryService, clock: FrozenClock
) -> None:
    old = (await service.append("p", Layer.EPISODIC, "the deploy failed")).outcome.memory
    clock.advance(days=40)
    new = (await service.append("p", Layer.EPISODIC, "the deploy failed again")).outcome.memory
    hits = (await service.search(SearchRequest(project="p", query="deploy failed"))).hits
    assert [h.memory.id for h in hits] == [new.id, old.id]
    assert hits[1].signals.tier is Tier.EXPIRED


async def test_search_lifts_a_weak_match_written_beside_strong_ones(
    service: MemoryService,
) -> None:
    review = [
        "deploy rollback failed on the billing cluster",
        "billing deploy rollback failed twice today",
        "the rollback of the billing deploy failed again",
        "rollback noted",
    ]
    for content in review:
        await service.append("p", Layer.EPISODIC, content, session_id="incident-7")
    # As weak a match as "rollback noted", and newer, so it wins the tie without the lift.
    await service.append("p", Layer.EPISODIC, "rollback listed", session_id="standup")
    request = SearchRequest(project="p", query="billing deploy rollback", mode=SearchMode.KEYWORD)
    hits = (await service.search(request)).hits
    order = [h.memory.content for h in hits]
    assert order.index("rollback noted") < order.index("rollback listed")
    lifted = {h.memory.content: h.signals.session_lift for h in hits}
    assert lifted["rollback noted"] > 0 == lifted["rollback listed"]

    flat = dataclasses.replace(service, ranking=RankingPolicy(session_weight=0))
    order = [h.memory.content for h in (await flat.search(request)).hits]
    assert order.index("rollback listed") < order.index("rollback noted")


async def test_search_lifts_a_memory_whose_follow_up_in_its_session_matches(
    service: MemoryService,
) -> None:
    question = await service.append(
        "p", Layer.EPISODIC, "what did we pick for the billing store?", session_id="chat"
    )
    await service.append(
        "p", Layer.EPISODIC, "postgres for the billing store, nightly backups", session_id="chat"
    )
    other = await service.append("p", Layer.EPISODIC, "billing store closes early", session_id="x")
    request = SearchRequest(project="p", query="postgres billing store", mode=SearchMode.KEYWORD)

    flat = dataclasses.replace(service, ranking=RankingPolicy(session_weight=0, follow_weight=0))
    order = [h.memory.id for h in (await flat.search(request)).hits]
    assert order.index(other.memory.id) < order.index(question.memory.id)

    # The session lift off, so that only the reply that follows the question lifts it.
    lifted = dataclasses.replace(service, ranking=RankingPolicy(session_weight=0))
    hits = (await lifted.search(request)).hits
    order = [h.memory.id for h in hits]
    assert order.index(question.memory.id) < order.index(other.memory.id)
    follow = {h.memory.id: h.signals.follow_lift for h in hits}
    assert follow[question.memory.id] > 0 == follow[other.memory.id]


async def test_search_time_range_filters_on_creation(
    service: MemoryService, clock: FrozenClock
) -> None:
    await service.append("p", Layer.EPISODIC, "january tea")
    cut = clock.advance(days=31)
    await service.append("p", Layer.EPISODIC, "february tea")
    hits = (await service.search(SearchRequest(project="p", query="tea", since=cut))).hits
    assert [h.memory.content for h in hits] == ["february tea"]
    hits = (await service.search(SearchRequest(project="p", query="tea", until=cut))).hits
    assert [h.memory.content for h in hits] == ["january tea"]


async def test_search_rejects_wordless_queries(service: MemoryService) -> None:
    with pytest.raises(InvalidQueryError):
        await service.search(SearchRequest(project="p", query="?!*"))


async def test_recall_returns_value_rules_and_suggestions(service: MemoryService) -> None:
    await service.learn("p", "user.language", "Dutch")
    await service.append("p", Layer.PROCEDURAL, "run smoke tests", key="deploying to production")
    await service.append("p", Layer.PROCEDURAL, "say hi", key="user greets")
    found = await service.recall("p", "user.language")
    assert found.value is not None and found.value.content == "Dutch"
    assert found.value.access_count == 1
    rules = await service.recall("p", "deploying the api to production")
    assert rules.value is None and [r.content for r in rules.rules] == ["run smoke tests"]
    missing = await service.recall("p", "language")
    assert missing.value is None and missing.suggestions == ["user.language"]


async def test_load_context_orders_by_tier_then_recency(
    service: MemoryService, clock: FrozenClock
) -> None:
    a = (await service.append("p", Layer.EPISODIC, "a")).outcome.memory
    clock.advance(days=2)
    b = (await service.append("p", Layer.EPISODIC, "b")).outcome.memory
    clock.advance(hours=2)
    c = (await service.append("p", Layer.EPISODIC, "c")).outcome.memory
    clock.advance(minutes=30)
    items = (await service.load_context("p", limit=10)).items
    assert [i.memory.id for i in items] == [c.id, b.id, a.id]
    assert [i.tier_before for i in items] == [Tier.ACTIVE, Tier.RECENT, Tier.ARCHIVED]
    assert all(i.memory.tier is Tier.ACTIVE and i.memory.access_count == 1 for i in items)


async def test_forget_and_clear(service: MemoryService) -> None:
    m = (await service.append("p", Layer.EPISODIC, "oops")).outcome.memory
    assert (await service.forget("p", m.id)).content == "oops"
    with pytest.raises(MemoryNotFoundError):
        await service.forget("p", m.id)
    await service.append("p", Layer.WORKING, "scratch")
    with pytest.raises(ConfirmationRequiredError):
        await service.clear("p", None, confirm=False)
    assert await service.clear("p", Layer.WORKING, confirm=True) == 1


async def test_compact_summarises_older_entries(service: MemoryService, clock: FrozenClock) -> None:
    for i in range(5):
        await service.append("p", Layer.EPISODIC, f"event {i}")
        clock.advance(minutes=1)
    result = await service.compact("p", Layer.EPISODIC, keep_last=2)
    assert (result.removed, result.kept) == (3, 2)
    (summary,) = result.summaries
    assert summary.content.startswith("[Summary of 3 entries]")
    assert len(summary.metadata["compacted_ids"]) == 3  # type: ignore[arg-type]
    rows = await service.repo.list_layer("p", Layer.EPISODIC, None, newest_first=False)
    assert len(rows) == 3


async def test_compact_semantic_is_a_noop_and_procedural_keeps_newest(
    service: MemoryService, repo: MemoryRepository
) -> None:
    await service.learn("p", "a", "1")
    assert (await service.compact("p", Layer.SEMANTIC, keep_last=0)).removed == 0
    for i in range(3):
        await service.append("p", Layer.PROCEDURAL, f"do {i}", key=f"when {i}")
    result = await service.compact("p", Layer.PROCEDURAL, keep_last=1)
    assert result.removed == 2 and result.summaries == []
    rules = await repo.list_layer("p", Layer.PROCEDURAL, None, newest_first=True)
    assert [r.content for r in rules] == ["do 2"]


async def test_compact_with_nothing_old_changes_nothing(service: MemoryService) -> None:
    await service.append("p", Layer.WORKING, "only")
    assert (await service.compact("p", Layer.WORKING, keep_last=10)).removed == 0
    with pytest.raises(InvalidInputError):
        await service.compact("p", Layer.WORKING, keep_last=-1)


async def test_relearning_refreshes_an_aged_fact(
    service: MemoryService, clock: FrozenClock
) -> None:
    await service.learn("p", "k", "v")
    clock.advance(days=45)
    out = await service.learn("p", "k", "v")
    assert out.status == "unchanged" and out.memory.last_accessed == clock.now()
    assert timedelta(0) == clock.now() - out.memory.reference_time


async def test_the_first_write_of_a_project_says_it_created_the_project(
    service: MemoryService,
) -> None:
    first = await service.append("p", Layer.EPISODIC, "first")
    again = await service.append("p", Layer.EPISODIC, "second")
    learned = await service.learn("other", "k", "v")
    batch = await service.append_many("third", [AppendItem(layer=Layer.EPISODIC, content="x")])
    later = await service.append_many("third", [AppendItem(layer=Layer.EPISODIC, content="y")])
    assert (first.new_project, again.new_project, learned.new_project) == (True, False, True)
    assert [r.new_project for r in batch + later] == [True, False]
    assert await service.repo.has_project("p") and not await service.repo.has_project("q")


async def test_min_match_leaves_out_weaker_hits_and_counts_them(service: MemoryService) -> None:
    # Keyword search only here (no model): the band comes from the share of query words.
    lunch = await service.append("p", Layer.EPISODIC, "The team lunch is on Friday")
    await service.append("p", Layer.EPISODIC, "Lunch money")
    query = "team lunch friday"
    every = await service.search(SearchRequest(project="p", query=query))
    assert [h.signals.match.value for h in every.hits] == ["strong", "weak"]
    assert every.dropped == 0
    strong = await service.search(SearchRequest(project="p", query=query, min_match=Match.STRONG))
    assert [h.memory.id for h in strong.hits] == [lunch.memory.id] and strong.dropped == 1
    none = await service.search(
        SearchRequest(project="p", query="what should I eat money", min_match=Match.STRONG)
    )
    assert none.hits == [] and none.dropped == 1
