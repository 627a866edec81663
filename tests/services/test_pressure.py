"""The storage cap (issue 33.4): who goes, in what order, in batches; on both backends."""

from __future__ import annotations

import dataclasses

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.domain.health_findings import health_findings
from memory_core.domain.models import Layer
from memory_core.ports.pressure import PressureStore
from memory_core.services import maintenance, pressure
from memory_core.services.memories import AppendItem, MemoryService
from memory_core.services.pressure import CapOnWrite, enforce_cap
from tests.fakes import FrozenClock

TIERS = TierPolicy()


def store_of(service: MemoryService) -> PressureStore:
    store = pressure.pressure_store(service.repo)
    assert store is not None
    return store


async def write(service: MemoryService, texts: list[str], project: str = "p") -> list[int]:
    return [(await service.append(project, Layer.EPISODIC, t)).outcome.memory.id for t in texts]


async def live_ids(service: MemoryService, project: str = "p") -> set[int]:
    rows = await service.repo.list_recent(project, None, limit=1000, include_superseded=True)
    return {m.id for m in rows}


async def test_no_cap_or_within_it_deletes_nothing(
    service: MemoryService, clock: FrozenClock
) -> None:
    await write(service, ["a1", "b2", "c3"])
    clock.advance(days=40)
    store = store_of(service)
    for policy in (PressurePolicy(), PressurePolicy(max_memories=3)):
        outcome = await enforce_cap(store, clock, TIERS, policy, "p")
        assert outcome.ids == [] and not outcome.over
    assert await store.project_size("p") == 3


async def test_least_used_expired_go_first_down_to_the_target(
    service: MemoryService, clock: FrozenClock
) -> None:
    old = await write(service, [f"old memory {i}" for i in range(8)])
    # Uses: rows 0-3 twice, row 4 once; 5, 6, 7 never (7 is the newest of those).
    await service.repo.hand_out("p", old[:5], clock.now())
    await service.repo.hand_out("p", old[:4], clock.now())
    clock.advance(days=31)  # all eight EXPIRED
    fresh = await write(service, [f"fresh memory {i}" for i in range(4)])  # ACTIVE
    store = store_of(service)
    policy = PressurePolicy(max_memories=10, low_water=0.8)  # 12 > 10: down to 8
    dry = await enforce_cap(store, clock, TIERS, policy, "p", dry_run=True)
    assert dry.over and dry.dry_run and dry.target == 8
    assert dry.ids == [old[5], old[6], old[7], old[4]]  # never used, oldest first; then once
    assert await store.project_size("p") == 12  # a dry run deletes nothing
    done = await enforce_cap(store, clock, TIERS, policy, "p")
    assert done.ids == sorted(dry.ids) and done.short == 0
    assert await store.project_size("p") == 8
    assert set(fresh) <= await live_ids(service)


async def test_never_pinned_active_recent_and_archived_only_when_allowed(
    service: MemoryService, clock: FrozenClock
) -> None:
    expired = await write(service, ["exp one", "exp two", "exp pinned"])
    await service.repo.set_pinned("p", [expired[2]], True)
    clock.advance(days=20)
    archived = await write(service, ["arch one", "arch two"])
    clock.advance(days=12)  # first three EXPIRED, next two ARCHIVED
    recent = await write(service, ["recent one"])
    clock.advance(hours=2)  # RECENT
    active = await write(service, ["active one"])
    store = store_of(service)
    policy = PressurePolicy(max_memories=2, low_water=0.5)  # 7 > 2: down to 1
    outcome = await enforce_cap(store, clock, TIERS, policy, "p")
    assert outcome.ids == expired[:2] and outcome.short == 4 and outcome.archived == 0
    allow = PressurePolicy(max_memories=2, low_water=0.5, evict_archived=True)
    outcome = await enforce_cap(store, clock, TIERS, allow, "p")
    assert outcome.ids == archived and outcome.archived == 2 and outcome.short == 2
    assert await live_ids(service) == {expired[2], *recent, *active}


async def test_a_superseding_memory_stays_while_its_history_does(
    service: MemoryService, clock: FrozenClock
) -> None:
    (first,) = await write(service, ["deploys go through fly.io"])
    newer = await service.append(
        "p", Layer.EPISODIC, "deploys go through render", supersedes=[first]
    )
    second = newer.outcome.memory.id
    await service.repo.hand_out("p", [first], clock.now())  # history used more than the fix
    clock.advance(days=40)
    store = store_of(service)
    one = PressurePolicy(max_memories=1, low_water=1.0)  # 2 > 1: one goes
    outcome = await enforce_cap(store, clock, TIERS, one, "p")
    # The newer memory is less used but deleting it would make the stale fact current again.
    assert outcome.ids == [first]
    kept = await service.repo.get("p", second)
    assert kept is not None and kept.superseded_by is None
    # With its history gone it may go like any other (nothing left to revive).
    await write(service, ["another fact entirely"])
    clock.advance(days=40)
    outcome = await enforce_cap(store, clock, TIERS, one, "p")
    assert second in outcome.ids


async def test_history_and_its_superseder_in_one_enforcement(
    service: MemoryService, clock: FrozenClock
) -> None:
    (first,) = await write(service, ["the api listens on port 8080"])
    await service.append("p", Layer.EPISODIC, "the api listens on port 9090", supersedes=[first])
    clock.advance(days=40)
    await write(service, ["a fresh note"])
    policy = PressurePolicy(max_memories=2, low_water=0.5)  # 3 > 2: down to 1
    outcome = await enforce_cap(store_of(service), clock, TIERS, policy, "p")
    assert len(outcome.ids) == 2  # the history first, then (a second round) its superseder
    assert await store_of(service).project_size("p") == 1


async def test_batches_report_progress(service: MemoryService, clock: FrozenClock) -> None:
    await write(service, [f"note number {i}" for i in range(7)])
    clock.advance(days=40)
    seen: list[tuple[int, int]] = []

    async def progress(done: int, total: int) -> None:
        seen.append((done, total))

    policy = PressurePolicy(max_memories=5, low_water=0.2)  # 7 > 5: down to 1
    outcome = await enforce_cap(
        store_of(service), clock, TIERS, policy, "p", batch=2, progress=progress
    )
    assert len(outcome.ids) == 6
    assert seen == [(2, 6), (4, 6), (6, 6)]


async def test_every_project_over_the_cap_and_no_other(
    service: MemoryService, clock: FrozenClock
) -> None:
    await write(service, ["p one", "p two", "p three"], "p")
    await write(service, ["q one", "q two", "q three"], "q")
    await write(service, ["r one"], "r")
    clock.advance(days=40)
    policy = PressurePolicy(max_memories=2, low_water=0.5)
    store = store_of(service)
    assert await store.projects_over(2) == {"p": 3, "q": 3}
    outcomes = await pressure.enforce_all(store, clock, TIERS, policy)
    assert [(o.project, len(o.ids)) for o in outcomes] == [("p", 2), ("q", 2)]
    assert await store.project_size("r") == 1


async def test_a_write_over_the_cap_enforces_it_in_the_background(
    service: MemoryService, clock: FrozenClock
) -> None:
    policy = PressurePolicy(max_memories=4, low_water=0.5)
    guard = CapOnWrite(store=store_of(service), clock=clock, tiers=TIERS, policy=policy)
    capped = MemoryService(
        repo=service.repo,
        clock=clock,
        limits=service.limits,
        tiers=TIERS,
        ranking=service.ranking,
        cap=guard,
    )
    await write(capped, [f"older note {i}" for i in range(4)])
    await guard.drain()
    assert not guard.running  # at the cap, not over it: no enforcement started
    clock.advance(days=40)
    await write(capped, ["the note that crosses the cap"])
    await guard.drain()
    assert await store_of(service).project_size("p") == 2  # down to low_water of the cap
    items = [AppendItem(layer=Layer.EPISODIC, content=f"batch note {i}") for i in range(3)]
    await capped.append_many("p", items)
    await guard.drain()
    assert await store_of(service).project_size("p") == 4  # the one EXPIRED left went


async def test_stats_say_when_near_or_over_the_cap(
    service: MemoryService, clock: FrozenClock
) -> None:
    await write(service, [f"stat note {i}" for i in range(9)])
    near = maintenance.MaintenanceService(
        repo=service.repo, clock=clock, policy=TIERS, pressure=PressurePolicy(max_memories=10)
    )
    assert "near_cap" in {n.code for n in (await near.stats("p")).health}
    over = maintenance.MaintenanceService(
        repo=service.repo, clock=clock, policy=TIERS, pressure=PressurePolicy(max_memories=8)
    )
    notes = {n.code: n.message for n in (await over.stats("p")).health}
    assert "nothing may make room" in notes["over_cap"]  # nothing is EXPIRED yet
    clock.advance(days=40)
    notes = {n.code: n.message for n in (await over.stats("p")).health}
    assert "over_cap=true" in notes["over_cap"]
    plain = maintenance.MaintenanceService(repo=service.repo, clock=clock, policy=TIERS)
    assert not {"near_cap", "over_cap"} & {n.code for n in (await plain.stats("p")).health}


def test_health_findings_put_the_cap_first() -> None:
    by_tier = {"ACTIVE": 1, "EXPIRED": 9}
    codes = [c for c, _ in health_findings(10, by_tier, 0, cap=9)]
    assert codes[0] == "over_cap" and "prune_suggested" in codes
    assert next(c for c, _ in health_findings(10, by_tier, 0, cap=11)) == "near_cap"
    assert "over_cap" not in [c for c, _ in health_findings(10, by_tier, 0, cap=20)]


async def test_a_project_nothing_more_may_leave_rests_between_writes(
    service: MemoryService, clock: FrozenClock
) -> None:
    policy = PressurePolicy(max_memories=2, low_water=0.5)
    store = store_of(service)
    guard = CapOnWrite(store=store, clock=clock, tiers=TIERS, policy=policy, background=False)
    capped = dataclasses.replace(service, cap=guard)
    listings = 0
    listed = store.eviction_candidates

    async def counted(*args: object, **kw: object) -> list[int]:
        nonlocal listings
        listings += 1
        return await listed(*args, **kw)  # type: ignore[arg-type]

    store.eviction_candidates = counted  # type: ignore[method-assign]
    await write(capped, ["fresh one", "fresh two", "fresh three"])  # over, nothing EXPIRED
    assert listings == 1 and guard.resting
    await write(capped, ["fresh four"])
    assert listings == 1  # resting: no listing on this write
    clock.advance(days=40)  # past the rest, and everything EXPIRED
    await write(capped, ["fresh five"])
    assert listings >= 2 and not guard.resting
    assert await store.project_size("p") == 1
