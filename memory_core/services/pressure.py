"""The storage cap (issue 33.4): the least valuable memories of a project over it make room.

A project holding more memories than `PressurePolicy.max_memories` loses some, with the
prune's safety.

Who goes, in order: EXPIRED memories, fewest uses first, then longest unused; then, only when
`PressurePolicy.evict_archived` is set, ARCHIVED ones likewise. Never a pinned memory, never an
ACTIVE or RECENT one (their reference time is after the bound), and never a memory that
superseded another: deleting it would make the fact it corrected current again (migration
0013's trigger), so such a row waits until its history has gone first. A superseded row
itself is history and may go like any other.

How: the candidates are listed first (the dry run's answer), then deleted in batches of
EVICT_BATCH, each one transaction that re-checks the condition, so a memory used, pinned or
made a superseder since the listing is kept, and a process killed mid-way leaves whole batches
deleted and the rest untouched (the kept counters move in the same transactions).

On write (`CapOnWrite`): the check reads the project's kept counters (a few rows by primary
key, about as cheap as a lookup; bench/pressure.py); only a project over the cap starts an
enforcement, in the background, one per project at a time, bringing it down to
`low_water` of the cap so the next few thousand writes need none. Listing the candidates reads
every evictable row of the project (use counts have no index), which is why it is never on the
write's own path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.domain.inputs import check_project
from memory_core.domain.tiers import tier_cutoffs
from memory_core.ports import Clock
from memory_core.ports.pressure import PressureStore

__all__ = [
    "EVICT_BATCH",
    "RETRY_SHORT",
    "CapOnWrite",
    "CapOutcome",
    "cap_on_write",
    "enforce_all",
    "enforce_cap",
    "pressure_store",
]

log = structlog.get_logger(__name__)

# Rows one transaction of the cap deletes: as the prune's batch (maintenance.PRUNE_BATCH),
# which keeps the write lock under half a second at a time at 1M rows.
EVICT_BATCH = 5000
# How long writes to a project left over its cap start no enforcement (the daily job still
# runs): without it every write would list the whole project again to find nothing.
RETRY_SHORT = timedelta(hours=1)
# Listings per enforcement: a second (and third) only when rows listed were used or pinned
# meanwhile and the project is still over its target.
_ROUNDS = 3


@dataclass(frozen=True)
class CapOutcome:
    """What an enforcement of one project's cap deleted (or, when `dry_run`, would delete)."""

    project: str
    cap: int | None  # None: no cap configured
    size: int  # memories before
    target: int | None  # where enforcement brings a project over the cap
    ids: list[int]  # deleted, or listed when dry_run; least valuable first when listed
    dry_run: bool
    archived: int = 0  # how many of `ids` were ARCHIVED (the rest EXPIRED)

    @property
    def over(self) -> bool:
        """Whether the project was over its cap."""
        return self.cap is not None and self.size > self.cap

    @property
    def short(self) -> int:
        """How many more would have to go to reach the target (nothing else may go)."""
        if self.target is None or not self.over:
            return 0
        return max(self.size - len(self.ids) - self.target, 0)


def pressure_store(repo: object) -> PressureStore | None:
    """`repo` as the cap's store, None when its backend does not provide one."""
    return repo if isinstance(repo, PressureStore) else None


async def _plan(
    store: PressureStore,
    clock: Clock,
    tiers: TierPolicy,
    policy: PressurePolicy,
    project: str,
    need: int,
) -> list[tuple[datetime, list[int]]]:
    """The rows to delete, by bound: EXPIRED ones first, then (if allowed) ARCHIVED ones."""
    cutoffs = tier_cutoffs(clock.now(), tiers)
    bounds = [cutoffs.archived_after]
    if policy.evict_archived:
        bounds.append(cutoffs.recent_after)
    planned: list[tuple[datetime, list[int]]] = []
    taken: set[int] = set()
    for bound in bounds:
        left = need - len(taken)
        if left <= 0:
            break
        # A later bound's rows include the earlier ones (all taken, else this pass would not
        # run): list past them, and drop them, so what remains is in its own value order.
        ids = await store.eviction_candidates(project, bound, limit=left + len(taken))
        fresh = [i for i in ids if i not in taken][:left]
        taken.update(fresh)
        planned.append((bound, fresh))
    return planned


async def enforce_cap(
    store: PressureStore,
    clock: Clock,
    tiers: TierPolicy,
    policy: PressurePolicy,
    project: str,
    *,
    dry_run: bool = False,
    batch: int = EVICT_BATCH,
    progress: Callable[[int, int], Awaitable[None]] | None = None,
) -> CapOutcome:
    """Bring a project over its cap down to the policy's target (list only, with `dry_run`).

    Nothing happens when no cap is set or the project is within it. `progress(done, total)` is
    awaited after each batch. See the module docstring for who goes and why it is safe.
    """
    project = check_project(project)
    cap, target = policy.max_memories, policy.target()
    size = await store.project_size(project)
    if cap is None or target is None or size <= cap:
        return CapOutcome(project, cap, size, target, [], dry_run)
    plan = await _plan(store, clock, tiers, policy, project, size - target)
    archived = sum(len(ids) for _, ids in plan[1:])
    if dry_run:
        listed = [i for _, ids in plan for i in ids]
        return CapOutcome(project, cap, size, target, listed, True, archived)
    deleted: list[int] = []
    archived = 0
    for _ in range(_ROUNDS):
        total = len(deleted) + sum(len(ids) for _, ids in plan)
        before = len(deleted)
        for n, (bound, ids) in enumerate(plan):
            for start in range(0, len(ids), batch):
                done = await store.evict(project, ids[start : start + batch], bound)
                deleted.extend(done)
                archived += len(done) if n else 0
                if progress is not None:
                    await progress(len(deleted), total)
        # Trigger: still over the target after this round. Why: a listed row was used or
        # pinned meanwhile, or a superseder became deletable once its history went. Outcome:
        # list again for what is left, while a round still deletes something.
        left = size - len(deleted) - target
        if left <= 0 or len(deleted) == before:
            break
        plan = await _plan(store, clock, tiers, policy, project, left)
    log.info(
        "memories.cap_enforced",
        project=project,
        cap=cap,
        size=size,
        deleted=len(deleted),
        archived=archived,
    )
    return CapOutcome(project, cap, size, target, sorted(deleted), False, archived)


async def enforce_all(
    store: PressureStore,
    clock: Clock,
    tiers: TierPolicy,
    policy: PressurePolicy,
    *,
    dry_run: bool = False,
    batch: int = EVICT_BATCH,
) -> list[CapOutcome]:
    """`enforce_cap` for every project over the cap (found in the kept counters)."""
    if policy.max_memories is None:
        return []
    over = await store.projects_over(policy.max_memories)
    return [
        await enforce_cap(store, clock, tiers, policy, project, dry_run=dry_run, batch=batch)
        for project in over
    ]


@dataclass
class CapOnWrite:
    """The cap's check after a write, and the background enforcement it may start.

    One enforcement per project at a time; a write to a project being enforced skips even the
    check, and so does one to a project an enforcement left over its cap, for RETRY_SHORT.
    `drain` awaits those running (tests, a clean shutdown). A failure is logged, never
    raised into a later write: the daily job enforces the cap again.
    """

    store: PressureStore
    clock: Clock
    tiers: TierPolicy
    policy: PressurePolicy
    background: bool = True
    running: dict[str, asyncio.Task[CapOutcome | None]] = field(default_factory=dict)
    # Projects an enforcement left over their cap (nothing else may go), and until when their
    # writes start none: rows only become EXPIRED with time, and listing reads them all.
    resting: dict[str, datetime] = field(default_factory=dict)

    async def after_write(self, projects: Sequence[str]) -> None:
        """Check the projects just written to; start an enforcement for those over the cap."""
        cap = self.policy.max_memories
        if cap is None:
            return
        for project in dict.fromkeys(projects):
            task = self.running.get(project)
            if task is not None and not task.done():
                continue
            if project in self.resting and self.clock.now() < self.resting[project]:
                continue
            if await self.store.project_size(project) <= cap:
                continue
            if not self.background:
                await self._enforce(project)
                continue
            self.running[project] = asyncio.create_task(self._enforce(project))

    async def _enforce(self, project: str) -> CapOutcome | None:
        try:
            outcome = await enforce_cap(self.store, self.clock, self.tiers, self.policy, project)
        except Exception:
            log.exception("memories.cap_failed", project=project)
            return None
        if outcome.short:
            self.resting[project] = self.clock.now() + RETRY_SHORT
        else:
            self.resting.pop(project, None)
        return outcome

    async def close(self) -> None:
        """Stop the enforcements still running (a batch in flight rolls back; the job resumes)."""
        tasks = [t for t in self.running.values() if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def drain(self) -> None:
        """Wait for the enforcements started so far."""
        tasks = [t for t in self.running.values() if not t.done()]
        if tasks:
            await asyncio.gather(*tasks)


def cap_on_write(
    repo: object, clock: Clock, tiers: TierPolicy, policy: PressurePolicy
) -> CapOnWrite | None:
    """The write hook for MemoryService.cap, None when no cap is set (or the store has none)."""
    store = pressure_store(repo)
    if policy.max_memories is None or store is None:
        return None
    return CapOnWrite(store=store, clock=clock, tiers=tiers, policy=policy)
