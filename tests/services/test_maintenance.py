import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Layer
from memory_core.errors import InvalidInputError
from memory_core.services import maintenance
from memory_core.services.memories import MemoryService
from tests.fakes import FrozenClock

POLICY = TierPolicy()


async def test_recalculate_then_prune_a_month_later(
    service: MemoryService, clock: FrozenClock
) -> None:
    repo = service.repo
    for i in range(3):
        await service.append("p", Layer.EPISODIC, f"e{i}")
    await service.append("q", Layer.EPISODIC, "other project")
    clock.advance(days=31)
    keep = await service.append("p", Layer.EPISODIC, "new")
    assert await maintenance.recalculate_tiers(repo, clock, POLICY, "p") == 3
    assert await maintenance.recalculate_tiers(repo, clock, POLICY) == 1  # q's row
    assert await maintenance.recalculate_tiers(repo, clock, POLICY) == 0
    dry = await maintenance.prune_expired(repo, clock, POLICY, project="p", dry_run=True)
    assert len(dry.ids) == 3
    done = await maintenance.prune_expired(repo, clock, POLICY, project="p", limit=10)
    assert done.ids == dry.ids
    assert await repo.get("p", keep.outcome.memory.id) is not None
    assert await repo.projects() == ["p", "q"]


async def test_stats_report_suggests_pruning(service: MemoryService, clock: FrozenClock) -> None:
    await service.append("p", Layer.EPISODIC, "old")
    clock.advance(days=31)
    report = await maintenance.memory_stats(service.repo, clock, POLICY, "p")
    assert report.stats.total == 1
    assert {n.code for n in report.health} >= {"prune_suggested", "inactive"}


async def test_prune_limit_must_be_positive(service: MemoryService, clock: FrozenClock) -> None:
    with pytest.raises(InvalidInputError) as info:
        await maintenance.prune_expired(service.repo, clock, POLICY, project="p", limit=0)
    assert info.value.field == "limit"


async def test_the_service_binds_repo_clock_and_policy(
    service: MemoryService, clock: FrozenClock
) -> None:
    upkeep = maintenance.MaintenanceService(
        repo=service.repo, clock=clock, policy=TierPolicy(archived_days=10)
    )
    await service.append("p", Layer.EPISODIC, "old")
    await service.append("p", Layer.EPISODIC, "older")
    clock.advance(days=11)  # expired under this service's policy, not under the default
    assert await maintenance.recalculate_tiers(service.repo, clock, POLICY, "p") == 2  # archived
    assert await upkeep.recalculate_tiers("p") == 2
    assert (await upkeep.stats("p")).stats.total == 2
    seen: list[tuple[int, int]] = []

    async def progress(done: int, total: int) -> None:
        seen.append((done, total))

    listed = await upkeep.prune_expired(project="p", dry_run=True)
    pruned = await upkeep.prune_expired(project="p", limit=1, progress=progress)
    assert len(listed.ids) == 2 and len(pruned.ids) == 1 and seen[-1] == (1, 1)
    assert (await upkeep.stats("p")).stats.total == 1
