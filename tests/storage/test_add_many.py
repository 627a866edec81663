"""Contract tests of MemoryRepository.add_many on both backends: same outcomes as repeated add."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.models import AddOutcome, Layer, MemoryDraft
from memory_core.errors import StorageError
from memory_core.ports import MemoryRepository
from tests.backends import StorageUnderTest
from tests.drafts import draft

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def batch() -> list[MemoryDraft]:
    """New, repeated, stored, keyed and working-session drafts mixed together."""
    return [
        draft("stored already"),
        draft("new one", metadata={"a": 1}),
        draft("new one", metadata={"b": 2}),  # repeats the previous draft: a duplicate
        draft("Dutch", layer=Layer.SEMANTIC, key="lang"),  # stored: unchanged
        draft("Frisian", layer=Layer.SEMANTIC, key="lang"),  # then updated
        draft("fresh key", layer=Layer.SEMANTIC, key="k2"),
        draft("per session", layer=Layer.WORKING, session_id="s1"),
        draft("per session", layer=Layer.WORKING, session_id="s2"),  # another identity
        draft("back-dated", created_at=T0 - timedelta(days=3)),
    ]


def shape(outcomes: list[AddOutcome]) -> list[tuple[object, ...]]:
    return [
        (
            o.status,
            o.previous_content,
            o.memory.content,
            o.memory.metadata,
            o.memory.key,
            o.memory.session_id,
            o.memory.created_at,
            o.memory.last_accessed,
        )
        for o in outcomes
    ]


async def seed(repo: MemoryRepository) -> None:
    await repo.add(draft("stored already"), T0 - timedelta(hours=1))
    await repo.add(draft("Dutch", layer=Layer.SEMANTIC, key="lang"), T0 - timedelta(hours=1))


async def test_add_many_gives_the_outcomes_of_repeated_add(storage: StorageUnderTest) -> None:
    one_by_one, batched = storage.repo(), storage.repo()
    await seed(one_by_one)
    expected = [await one_by_one.add(d, T0) for d in batch()]
    await one_by_one.delete_layer("p", None)
    await seed(batched)
    got = await batched.add_many(batch(), T0)
    assert shape(got) == shape(expected)
    assert [o.status for o in got] == [
        "duplicate",
        "created",
        "duplicate",
        "unchanged",
        "updated",
        "created",
        "created",
        "created",
        "created",
    ]
    assert got[1].memory.id == got[2].memory.id and got[2].memory.metadata == {"a": 1, "b": 2}
    assert got[3].memory.id == got[4].memory.id
    assert got[6].memory.id != got[7].memory.id
    for o in got:
        assert await batched.get("p", o.memory.id) is not None
    assert await batched.add_many([], T0) == []


async def test_add_many_is_all_or_nothing(storage: StorageUnderTest) -> None:
    repo = storage.repo()
    await repo.add(draft("kept", layer=Layer.SEMANTIC, key="k"), T0)
    # A token count no integer column holds makes the last write fail on both backends.
    bad = draft("too big").model_copy(update={"token_count": 2**63})
    batch = [draft("first"), draft("changed", layer=Layer.SEMANTIC, key="k"), bad]
    with pytest.raises((StorageError, OverflowError)):
        await repo.add_many(batch, T0)
    stored = await repo.list_recent("p", None, limit=10)
    assert [m.content for m in stored] == ["kept"]


async def test_concurrent_batches_with_shared_identities_do_not_deadlock(
    storage: StorageUnderTest,
) -> None:
    # Two batches naming the same identities in opposite orders: on PostgreSQL the identity
    # locks are taken in one global order, so neither waits for the other forever.
    repo = storage.repo()
    drafts = [draft(f"shared {i}") for i in range(20)]
    drafts += [draft(f"v{i}", layer=Layer.SEMANTIC, key=f"k{i}") for i in range(5)]
    first, second = await asyncio.wait_for(
        asyncio.gather(repo.add_many(drafts, T0), repo.add_many(drafts[::-1], T0)), 30
    )
    assert sorted(o.status for o in first + second).count("created") == 25
    assert len({o.memory.id for o in first}) == 25
    assert {o.memory.id for o in first} == {o.memory.id for o in second}
