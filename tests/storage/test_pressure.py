"""The storage cap's store (ports.pressure) on both backends."""

from __future__ import annotations

from datetime import timedelta

import aiosqlite
import pytest

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft
from memory_core.ports.pressure import PressureStore
from memory_core.services.pressure import pressure_store
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, pressure
from tests.backends import StorageUnderTest
from tests.fakes import START

MINUTE = timedelta(minutes=1)


def draft(text: str, project: str = "p", **extra: object) -> MemoryDraft:
    return MemoryDraft(
        project=project,
        layer=Layer.EPISODIC,
        content=text,
        content_hash=content_hash(text),
        token_count=3,
        **extra,
    )


def store_of(storage: StorageUnderTest) -> PressureStore:
    store = pressure_store(storage.repo())
    assert store is not None
    return store


async def test_sizes_come_from_the_kept_counters(storage: StorageUnderTest) -> None:
    repo = storage.repo()
    await repo.add_many([draft(f"row {i}") for i in range(5)], START)
    await repo.add_many([draft(f"row {i}", "q") for i in range(2)], START)
    store = store_of(storage)
    assert await store.project_size("p") == 5
    assert await store.project_size("none") == 0
    assert await store.projects_over(2) == {"p": 5}
    assert await store.projects_over(1) == {"p": 5, "q": 2}


async def test_candidates_and_deletes_keep_what_must_stay(storage: StorageUnderTest) -> None:
    repo = storage.repo()
    rows = [o.memory.id for o in await repo.add_many([draft(f"c{i}") for i in range(5)], START)]
    later = START + timedelta(days=10)
    await repo.hand_out("p", [rows[1]], later)  # used after the bound
    await repo.set_pinned("p", [rows[2]], True)
    newer = await repo.add(draft("c-new", supersedes=(rows[3],)), START)
    store = store_of(storage)
    bound = START + timedelta(days=1)
    # rows[3] is history (may go); the row that superseded it may not, nor pinned or used ones.
    listed = await store.eviction_candidates("p", bound, limit=10)
    assert listed == [rows[0], rows[3], rows[4]]
    assert await store.eviction_candidates("p", bound, limit=1) == [rows[0]]
    # The delete re-checks: a row used since it was listed stays.
    await repo.hand_out("p", [rows[4]], later)
    asked = [rows[0], rows[1], rows[2], rows[4], newer.memory.id]
    assert await store.evict("p", asked, bound) == [rows[0]]
    assert await store.evict("other", [rows[3]], bound) == []  # another project's call
    assert await store.evict("p", [rows[3]], bound) == [rows[3]]
    # With its history gone the superseder is an ordinary candidate.
    assert await store.eviction_candidates("p", bound, limit=10) == [newer.memory.id]
    assert await store.project_size("p") == 4
    assert await storage.fetchval("SELECT count(*) FROM context_snapshots") == 4


async def test_sqlite_lists_in_pages_with_the_same_answer(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = SqliteMemoryRepository(SqliteSession(db))
    # Nine rows at three instants (ties on the time), used 0-2 times.
    ids: list[int] = []
    for n in range(3):
        added = await repo.add_many([draft(f"pg{n}-{i}") for i in range(3)], START + n * MINUTE)
        ids += [o.memory.id for o in added]
    await repo.hand_out("p", ids[0::2], START + 5 * MINUTE)  # used once
    await repo.hand_out("p", ids[0::4], START + 5 * MINUTE)  # these twice
    bound = START + timedelta(days=1)
    whole = await repo.eviction_candidates("p", bound, limit=100)
    monkeypatch.setattr(pressure, "LIST_PAGE", 2)
    for limit in (1, 4, 9, 100):
        assert await repo.eviction_candidates("p", bound, limit=limit) == whole[:limit]
    assert len(whole) == 9 and whole[:4] == [ids[1], ids[3], ids[5], ids[7]]
