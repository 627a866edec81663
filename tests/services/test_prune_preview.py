"""The forgetting page's preview, on both backends: its pages together are exactly what an
unlimited prune deletes (used and pinned memories, other projects and fresh ones left out),
in a stable order with no row twice, and its count stops at the cap. Access recording off
(a read-only caller) hands the same rows out untouched."""

from __future__ import annotations

from datetime import datetime

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Layer, Memory
from memory_core.ports import MemoryRepository
from memory_core.services import maintenance
from memory_core.services.access_recording import access_unrecorded, hand_out
from memory_core.services.memories import MemoryService
from memory_core.services.prune_preview import prune_preview
from tests.fakes import FrozenClock

POLICY = TierPolicy()


async def _pages(
    repo: MemoryRepository, clock: FrozenClock, limit: int
) -> tuple[list[Memory], int]:
    """Every page of the preview of project p, and how many pages it took."""
    rows: list[Memory] = []
    after: tuple[datetime, int] | None = None
    for pages in range(1, 50):  # bounded: a preview that never ends fails below
        page = await prune_preview(
            repo, clock, POLICY, "p", after=after, limit=limit, count_cap=100
        )
        rows += page.rows
        if page.next_after is None:
            return rows, pages
        after = page.next_after
    raise AssertionError("the preview did not end")


async def test_the_pages_are_what_a_prune_deletes(
    repo: MemoryRepository, service: MemoryService, clock: FrozenClock
) -> None:
    old = []
    for n in range(11):
        done = await service.append("p", Layer.EPISODIC, f"event {n} of the spring release")
        old.append(done.memory.id)
        if n % 3:  # some share a creation time: the id breaks the tie
            clock.advance(hours=1)
    await service.append("q", Layer.EPISODIC, "another project's old event")
    clock.advance(days=POLICY.archived_days + 1)
    await service.append("p", Layer.EPISODIC, "a fresh event")
    await service.read("p", old[4])  # used since: kept
    await repo.set_pinned("p", [old[7]], True)  # pinned: never pruned

    dry = await maintenance.prune_expired(repo, clock, POLICY, project="p", dry_run=True)
    rows, pages = await _pages(repo, clock, limit=4)
    ids = [m.id for m in rows]
    assert sorted(ids) == sorted(dry.ids) == sorted(set(old) - {old[4], old[7]})
    assert pages == 3  # 9 rows, 4 a page
    assert [(m.reference_time, m.id) for m in rows] == sorted(
        (m.reference_time, m.id) for m in rows
    )
    first = await prune_preview(repo, clock, POLICY, "p", after=None, limit=4, count_cap=100)
    assert (first.total, first.counted) == (9, True)
    capped = await prune_preview(repo, clock, POLICY, "p", after=None, limit=4, count_cap=5)
    assert (capped.total, capped.counted) == (5, False)
    last = await prune_preview(
        repo,
        clock,
        POLICY,
        "p",
        after=(rows[-1].reference_time, rows[-1].id),
        limit=4,
        count_cap=100,
    )
    assert last.rows == [] and last.next_after is None

    pruned = await maintenance.prune_expired(repo, clock, POLICY, project="p")
    assert sorted(pruned.ids) == sorted(ids)
    assert (await _pages(repo, clock, limit=4))[0] == []


async def test_without_access_recording_hand_out_changes_nothing(
    repo: MemoryRepository, service: MemoryService, clock: FrozenClock
) -> None:
    a = (await service.append("p", Layer.EPISODIC, "first note")).memory
    b = (await service.append("p", Layer.EPISODIC, "second note")).memory
    clock.advance(hours=2)
    with access_unrecorded():
        shown = await hand_out(repo, "p", [b.id, 10**9, a.id], clock.now())
    assert [m.id for m in shown] == [b.id, a.id]
    assert [(m.access_count, m.last_accessed) for m in shown] == [(0, None), (0, None)]
    assert (await repo.get("p", a.id)) == a
    handed = await hand_out(repo, "p", [a.id], clock.now())
    assert handed[0].access_count == 1 and handed[0].last_accessed == clock.now()
