"""Several phrasings of one question, searched together and fused (both backends)."""

from __future__ import annotations

import pytest

from memory_core.domain.match import Match
from memory_core.domain.models import Layer
from memory_core.errors import InvalidInputError, InvalidQueryError
from memory_core.services.memories import MemoryService, SearchRequest


async def test_each_phrasing_finds_its_part_and_the_fusion_holds_both(
    service: MemoryService,
) -> None:
    adoption = await service.append("p", Layer.EPISODIC, "Caroline plans to adopt a child")
    agency = await service.append("p", Layer.EPISODIC, "The agency approved the paperwork")
    await service.append("p", Layer.EPISODIC, "Unrelated note about gardening")
    one = await service.search(SearchRequest(project="p", query="adopt child"))
    assert [h.memory.id for h in one.hits] == [adoption.memory.id]
    both = await service.search(
        SearchRequest(project="p", query="adopt child", queries=("agency paperwork",))
    )
    assert {h.memory.id for h in both.hits} == {adoption.memory.id, agency.memory.id}
    only = await service.search(SearchRequest(project="p", queries=("agency paperwork",)))
    assert [h.memory.id for h in only.hits] == [agency.memory.id]


async def test_a_memory_found_by_several_phrasings_ranks_first(service: MemoryService) -> None:
    both = await service.append("p", Layer.EPISODIC, "tea and cake at the cafe")
    await service.append("p", Layer.EPISODIC, "tea tea tea")
    await service.append("p", Layer.EPISODIC, "cake cake cake")
    found = await service.search(SearchRequest(project="p", queries=("tea", "cake")))
    assert found.hits[0].memory.id == both.memory.id
    assert len(found.hits) == 3


async def test_min_match_and_limit_apply_after_fusion(service: MemoryService) -> None:
    lunch = await service.append("p", Layer.EPISODIC, "The team lunch is on Friday")
    await service.append("p", Layer.EPISODIC, "Lunch money")
    found = await service.search(
        SearchRequest(
            project="p", queries=("team lunch friday", "lunch on friday"), min_match=Match.STRONG
        )
    )
    assert [h.memory.id for h in found.hits] == [lunch.memory.id] and found.dropped == 1
    capped = await service.search(SearchRequest(project="p", queries=("lunch", "team"), limit=1))
    assert len(capped.hits) == 1


@pytest.mark.parametrize(
    ("request_fields", "field", "reason"),
    [
        ({}, "query", "is required"),
        ({"queries": ("a",) * 6}, "queries", "at most 5"),
        ({"query": "tea", "queries": ("ok", "  ")}, "queries[1]", "must not be empty"),
    ],
)
async def test_bad_phrasings_name_their_field(
    service: MemoryService, request_fields: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason) as info:
        await service.search(SearchRequest(project="p", **request_fields))
    assert info.value.field == field


async def test_a_phrasing_without_words_is_named(service: MemoryService) -> None:
    await service.append("p", Layer.EPISODIC, "tea")
    with pytest.raises(InvalidQueryError) as info:
        await service.search(SearchRequest(project="p", queries=("tea", "?!")))
    assert info.value.field == "queries[1]"
