"""When it happened: dates resolved on each write, stored, searchable, carried (both backends)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import aiosqlite
import pytest

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.domain.models import Layer, SearchMode
from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import MemoryTransfer
from memory_core.services import transfer
from memory_core.services.memories import AppendItem, MemoryService, SearchRequest
from memory_core.storage.postgres import PostgresMemoryRepository, PostgresSession, PostgresStore
from memory_core.storage.postgres.transfer import PostgresMemoryTransfer
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer
from server.settings import Settings
from tests.fakes import FrozenClock

# A past conversation's session: Monday 8 May 2023, 13:56 UTC.
SESSION = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


async def test_dates_resolve_against_occurred_at_else_now(
    service: MemoryService, clock: FrozenClock
) -> None:
    said = await service.append(
        "p", Layer.EPISODIC, "I went to a support group yesterday", occurred_at=SESSION
    )
    assert said.memory.occurred_at == SESSION
    assert said.memory.dates == "2023-05-07"
    now = await service.append("p", Layer.EPISODIC, "We hiked yesterday")
    assert now.memory.occurred_at is None
    assert now.memory.dates == (clock.now() - timedelta(days=1)).date().isoformat()
    plain = await service.append("p", Layer.EPISODIC, "May I ask a question?")
    assert plain.memory.dates is None
    stored = await service.repo.get("p", said.memory.id)
    assert stored == said.memory  # read back as written, on this backend


async def test_append_many_resolves_each_item_against_its_own_time(
    service: MemoryService,
) -> None:
    results = await service.append_many(
        "p",
        [
            AppendItem(
                layer=Layer.EPISODIC,
                content="two weekends ago we painted",
                occurred_at=datetime(2023, 6, 9, 10, 0),  # naive: taken as UTC
            ),
            AppendItem(
                layer=Layer.EPISODIC, content="last summer and yesterday", occurred_at=SESSION
            ),
        ],
    )
    assert [r.memory.dates for r in results] == [
        "2023-05-27..2023-05-28",
        "2022-06-01..2022-08-31 2023-05-07",  # earliest first
    ]
    assert results[0].memory.occurred_at == datetime(2023, 6, 9, 10, 0, tzinfo=UTC)


async def test_an_update_resolves_the_new_text_and_keeps_occurred_at(
    service: MemoryService, clock: FrozenClock
) -> None:
    first = await service.append(
        "p", Layer.SEMANTIC, "moved last month", key="move", occurred_at=SESSION
    )
    assert first.memory.dates == "2023-04-01..2023-04-30"
    again = await service.append("p", Layer.SEMANTIC, "moved in March 2021", key="move")
    assert again.status == "updated"
    assert again.memory.occurred_at == SESSION
    assert again.memory.dates == "2021-03-01..2021-03-31"
    learned = await service.learn("p", "move", "no date at all")
    assert learned.memory.dates is None


@pytest.mark.parametrize(
    "when", [datetime(1969, 12, 31, tzinfo=UTC), datetime(2999, 1, 1, tzinfo=UTC)]
)
async def test_an_impossible_occurred_at_is_refused_by_name(
    service: MemoryService, when: datetime
) -> None:
    with pytest.raises(InvalidInputError) as info:
        await service.append("p", Layer.EPISODIC, "text", occurred_at=when)
    assert info.value.field == "occurred_at"
    with pytest.raises(InvalidInputError) as batch:
        await service.append_many(
            "p", [AppendItem(layer=Layer.EPISODIC, content="x", occurred_at=when)]
        )
    assert batch.value.field == "items[0].occurred_at"
    assert await service.repo.projects() == []


async def test_keyword_search_finds_a_memory_by_its_resolved_month(
    service: MemoryService,
) -> None:
    said = await service.append(
        "p", Layer.EPISODIC, "I went to a support group yesterday", occurred_at=SESSION
    )
    await service.append("p", Layer.EPISODIC, "I went to the cinema", occurred_at=SESSION)
    found = await service.search(
        SearchRequest(project="p", query="support group May 2023", mode=SearchMode.KEYWORD)
    )
    assert found.hits[0].memory.id == said.memory.id
    # Only the dates hold these words: the content says "yesterday".
    months = await service.search(
        SearchRequest(project="p", query="may 2023", mode=SearchMode.KEYWORD)
    )
    assert [h.memory.id for h in months.hits] == [said.memory.id]


async def test_compaction_summaries_keep_their_entries_dates(
    service: MemoryService, clock: FrozenClock
) -> None:
    for text in ("met Ann yesterday", "call Bob next Friday", "note three", "note four"):
        await service.append("p", Layer.EPISODIC, text, occurred_at=SESSION)
    await service.compact("p", Layer.EPISODIC, keep_last=2)
    rows = await service.repo.list_layer("p", Layer.EPISODIC, None, newest_first=False)
    summary = next(m for m in rows if "compacted_ids" in m.metadata)
    # Resolved when each entry was said, not against the summary's own time.
    assert summary.dates == "2023-05-07 2023-05-12"


def _transfer(
    backend: str, db: aiosqlite.Connection, pg: PostgresStore, s: Settings
) -> tuple[MemoryTransfer, SqliteMemoryRepository | PostgresMemoryRepository]:
    if backend == "sqlite":
        return (
            SqliteMemoryTransfer(SqliteSession(db), s.db, gap_s=0),
            SqliteMemoryRepository(SqliteSession(db)),
        )
    return (
        PostgresMemoryTransfer(PostgresSession(pg.pool)),
        PostgresMemoryRepository(PostgresSession(pg.pool)),
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_export_and_import_carry_dates_and_occurred_at(
    db: aiosqlite.Connection,
    pg_store: PostgresStore,
    settings: Settings,
    clock: FrozenClock,
    backend: str,
) -> None:
    store, repo = _transfer(backend, db, pg_store, settings)
    service = MemoryService(
        repo=repo,
        clock=clock,
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
    )
    said = await service.append(
        "p", Layer.EPISODIC, "painted it two weekends ago", occurred_at=datetime(2023, 6, 9)
    )
    await service.append("p", Layer.EPISODIC, "no time here")
    lines = [line async for line in transfer.export_lines(store, clock)]
    records = [json.loads(line) for line in lines[1:]]
    dated = next(r for r in records if r["content"].startswith("painted"))
    assert dated["dates"] == "2023-05-27..2023-05-28"
    assert dated["occurred_at"].startswith("2023-06-09T00:00")
    # Written only when set: a memory without them reads as before 0010.
    plain = next(r for r in records if r["content"] == "no time here")
    assert "dates" not in plain and "occurred_at" not in plain

    stored = await repo.list_layer("p", Layer.EPISODIC, None, newest_first=False)
    assert await repo.delete("p", [m.id for m in stored]) == 2
    parsed = transfer.parse_export(
        lines, schema_version=await store.schema_version(), now=clock.now()
    )
    counts = await transfer.import_records(store, parsed)
    assert counts.imported == 2
    back = await repo.get("p", said.memory.id)
    assert back is not None
    assert (back.dates, back.occurred_at) == (said.memory.dates, said.memory.occurred_at)
    # The keyword index holds the imported dates too.
    found = await service.search(
        SearchRequest(project="p", query="may 2023", mode=SearchMode.KEYWORD)
    )
    assert [h.memory.id for h in found.hits] == [said.memory.id]


def test_a_record_without_dates_gets_them_on_import_and_junk_dates_are_dropped() -> None:
    now = datetime(2026, 11, 23, tzinfo=UTC)
    header = {
        "format": "memstrata-export",
        "format_version": 2,
        "schema_version": 9,
        "exported_at": "2026-11-20T10:00:00Z",
        "project": None,
    }
    base: dict[str, object] = {
        "kind": "memory",
        "project": "p",
        "layer": "episodic",
        "key": None,
        "metadata": {},
        "session_id": None,
        "created_at": "2023-05-08T13:56:00Z",
        "updated_at": "2023-05-08T13:56:00Z",
        "last_accessed": None,
        "access_count": 0,
        "memory_tier": "ACTIVE",
        "content_hash": "x",
        "token_count": 3,
    }
    lines = [
        json.dumps(header),
        json.dumps({**base, "id": 1, "content": "went out yesterday"}),  # before 0010
        json.dumps({**base, "id": 2, "content": "a", "dates": "junk 2023-05-07 2023-13-40"}),
    ]
    parsed = transfer.parse_export(lines, schema_version=10, now=now)
    assert [m.dates for m in parsed.memories] == ["2023-05-07", "2023-05-07"]


async def test_a_query_naming_a_time_lifts_the_memory_of_that_time(service: MemoryService) -> None:
    june = await service.append(
        "p", Layer.EPISODIC, "we painted the fence", occurred_at=datetime(2023, 6, 20)
    )
    may = await service.append(
        "p", Layer.EPISODIC, "we painted the fence last weekend", occurred_at=SESSION
    )
    found = await service.search(SearchRequest(project="p", query="painted the fence in May 2023"))
    assert found.hits[0].memory.id == may.memory.id
    assert found.hits[0].signals.date_lift > 0
    when = await service.search(SearchRequest(project="p", query="When was the fence painted?"))
    assert when.hits[0].memory.id == may.memory.id  # it says when: 6-7 May 2023
    plain = await service.search(SearchRequest(project="p", query="painted the fence"))
    assert plain.hits[0].memory.id == june.memory.id  # newer and shorter, no time asked
    assert all(h.signals.date_lift == 0 for h in plain.hits)
