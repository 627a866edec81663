"""Dates said in the present or future resolve forward, through the write and the search (N3).

Written on Wednesday 25 November 2026: the memory's stored `dates` (shown to the model as
`when=`) are the coming Friday for "is on Friday" and the last one for "shipped it on Friday",
and questions asked then or later find each by its day.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import MemoryService, SearchRequest
from tests.fakes import FrozenClock

WEDNESDAY = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)


async def _written(service: MemoryService, clock: FrozenClock) -> dict[str, int]:
    clock.set(WEDNESDAY)
    texts = {
        "lunch": "The team lunch is on Friday",
        "priya": "Meeting with Priya on Thursday at 10",
        "api": "The v2 API launches in March",
        "shipped": "We shipped the importer on Friday",
        "vague": "Lunch order on Friday",
    }
    ids = {}
    for name, text in texts.items():
        ids[name] = (await service.append("p", Layer.EPISODIC, text)).memory.id
    return ids


async def test_the_stored_dates_follow_the_tense(
    service: MemoryService, clock: FrozenClock
) -> None:
    ids = await _written(service, clock)
    dates = {}
    for name, mid in ids.items():
        stored = await service.repo.get("p", mid)
        assert stored is not None
        dates[name] = stored.dates
    assert dates == {
        "lunch": "2026-11-27",
        "priya": "2026-11-26",
        "api": "2027-03-01..2027-03-31",
        "shipped": "2026-11-20",
        "vague": None,  # unclear tense: no date rather than a guess
    }


async def test_questions_find_the_memory_of_the_day_they_name(
    service: MemoryService, clock: FrozenClock
) -> None:
    ids = await _written(service, clock)

    async def first(query: str) -> int:
        found = await service.search(
            SearchRequest(project="p", query=query, mode=SearchMode.KEYWORD)
        )
        return found.hits[0].memory.id

    # Asked on the Wednesday: "last Friday" is the importer's, not the lunch's.
    assert await first("What happened last Friday?") == ids["shipped"]
    assert await first("When is the team lunch?") == ids["lunch"]
    # Asked on the Monday after: the lunch was "on Friday".
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    assert await first("Which lunch was on Friday?") == ids["lunch"]
