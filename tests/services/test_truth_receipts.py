"""One truth per fact, checked against the database on both backends: paging while writers
write at the same time, a forget's receipt against every place a memory lived (row, vector,
keyword index, history, tags), and the memories a correction replaced ("supersedes #m")."""

# ruff: noqa: F811 - pytest fixtures imported from test_truth, then named as arguments

from __future__ import annotations

import asyncio

import pytest

from memory_core.domain.models import BrowseQuery, Layer
from memory_core.errors import MemoryNotFoundError
from memory_core.services.memories import MemoryService
from memory_core.services.truth import TruthService
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock
from tests.services.test_truth import service, truth  # noqa: F401 - the fixtures, shared

# A word no other memory of these tests holds: the keyword index is probed for it directly.
MARKER = "quetzalcoatl"


async def _keyword_index_holds(storage: StorageUnderTest, project: str, word: str) -> int:
    """Entries of the keyword index itself matching `word` (not through the rows)."""
    if storage.name == "sqlite":
        table_id = await storage.fetchval(
            "SELECT id FROM context_snapshots_fts_projects WHERE project = ?", project
        )
        if table_id is None:
            return 0
        fts = f"context_snapshots_fts_{int(table_id)}"
        return int(await storage.fetchval(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", word))
    # PostgreSQL's keyword index is the rows' generated tsvector column (GIN indexed).
    return int(
        await storage.fetchval(
            "SELECT count(*) FROM context_snapshots WHERE project = ?"
            " AND search_vector @@ plainto_tsquery('memstrata', ?)",
            project,
            word,
        )
    )


async def test_pages_hold_still_while_writers_write_at_the_same_time(
    service: MemoryService, truth: TruthService
) -> None:
    ids = [
        (await service.append("p", Layer.EPISODIC, f"paged note number {n}")).memory.id
        for n in range(12)
    ]
    first, cursor = await truth.list_memories(BrowseQuery(project="p", limit=3))

    async def page_through(cursor: int | None) -> list[int]:
        seen: list[int] = []
        while cursor is not None:
            page, cursor = await truth.list_memories(
                BrowseQuery(project="p", limit=3, before_id=cursor)
            )
            seen += [m.id for m in page]
            await asyncio.sleep(0)  # let the writers in between two pages
        return seen

    async def write(n: int) -> int:
        await asyncio.sleep(0)
        return (await service.append("p", Layer.EPISODIC, f"written meanwhile {n}")).memory.id

    paging = asyncio.create_task(page_through(cursor))
    written = await asyncio.gather(*(write(n) for n in range(8)))
    listed = [m.id for m in first] + await paging
    # Every memory there was when paging began, once, newest first; none written meanwhile.
    assert listed == sorted(ids, reverse=True)
    assert not set(listed) & set(written) and len(set(written)) == 8
    # A listing marks nothing as used.
    again, _ = await truth.list_memories(BrowseQuery(project="p", limit=50))
    assert len(again) == 20 and all(m.access_count == 0 for m in again)


async def test_a_forget_receipt_matches_what_the_database_still_holds(
    service: MemoryService, truth: TruthService, storage: StorageUnderTest
) -> None:
    doomed = (
        await service.append(
            "p", Layer.EPISODIC, f"{MARKER} deploy notes, first draft", tags=["old", "deploy"]
        )
    ).memory
    await truth.update("p", doomed.id, content=f"{MARKER} deploy notes, second draft")
    kept = (await service.append("p", Layer.EPISODIC, "unrelated note", tags=["deploy"])).memory
    assert await _keyword_index_holds(storage, "p", MARKER) == 1

    preview = await truth.forget(BrowseQuery(project="p", tags=("old",)))
    assert (preview.dry_run, preview.ids, preview.remaining) == (True, [doomed.id], {})
    assert (preview.rows, preview.vectors, preview.versions, preview.tags) == (1, 1, 1, 2)
    assert preview.keyword_entries == 1
    assert await storage.fetchval("SELECT count(*) FROM context_snapshots") == 2  # dry run

    receipt = await truth.forget(BrowseQuery(project="p", tags=("old",)), dry_run=False)
    assert receipt.ids == [doomed.id]
    removed = (receipt.rows, receipt.vectors, receipt.keyword_entries, receipt.versions)
    assert removed == (1, 1, 1, 1) and receipt.tags == 2
    assert set(receipt.remaining) == {"rows", "vectors", "keyword_entries", "versions", "tags"}
    assert set(receipt.remaining.values()) == {0}
    # The receipt's zeros, read again from the database behind the store's back.
    for table, column in (
        ("context_snapshots", "id"),
        ("context_embeddings", "id"),
        ("memory_versions", "memory_id"),
    ):
        sql = f"SELECT count(*) FROM {table} WHERE {column} = ?"
        assert await storage.fetchval(sql, doomed.id) == 0, table
    if storage.name == "sqlite":
        sql = "SELECT count(*) FROM memory_tags WHERE memory_id = ?"
        assert await storage.fetchval(sql, doomed.id) == 0
    assert await _keyword_index_holds(storage, "p", MARKER) == 0
    # What the filter did not select is all still there.
    assert await storage.fetchval("SELECT count(*) FROM context_embeddings WHERE id = ?", kept.id)
    page, _ = await truth.list_memories(BrowseQuery(project="p", tags=("deploy",)))
    assert [m.id for m in page] == [kept.id]


async def test_a_correction_names_the_memories_it_replaced(
    service: MemoryService, truth: TruthService, clock: FrozenClock
) -> None:
    first = (await service.append("p", Layer.EPISODIC, "We deploy the backend to Fly.io")).memory
    clock.advance(minutes=1)
    second = (await service.append("p", Layer.EPISODIC, "The API listens on port 8080")).memory
    clock.advance(minutes=1)
    newer = await service.append(
        "p", Layer.EPISODIC, "Backend on AWS, API on port 9090", supersedes=[first.id, second.id]
    )
    replaced = await truth.replaced("p", newer.memory.id)
    assert [m.id for m in replaced] == [second.id, first.id]
    assert all(m.superseded_by == newer.memory.id for m in replaced)
    assert await truth.replaced("p", first.id) == []
    with pytest.raises(MemoryNotFoundError):
        await truth.replaced("other", newer.memory.id)
