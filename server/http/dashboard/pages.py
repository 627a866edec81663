"""What each dashboard page shows, gathered through the same services as the MCP tools.

No SQL and no second data path: the overview's counts are `get_memory_stats`'s report, the
forgetting page's list is what `prune_expired_contexts` would delete (a page of it at a time,
memory_core.services.prune_preview), and so on. Looking never marks a
memory as used (search with `mark_used=False`, `peek`, `browse`), so a person browsing does
not keep memories from ageing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory_core.domain.conversation import CachedResult, SessionInfo, SessionStats, Summary
from memory_core.domain.models import (
    BrowseQuery,
    Layer,
    Memory,
    SearchHit,
    SearchMode,
    StoreStats,
    Tier,
)
from memory_core.domain.tiers import classify_tier, tier_cutoffs
from memory_core.services import maintenance
from memory_core.services.memories import SearchRequest
from memory_core.services.prune_preview import PrunePreview, prune_preview
from server.app_context import AppContext
from server.http.dashboard.advice import Advice, dashboard_advice
from server.http.dashboard.chart import (
    CHART_HEIGHT,
    LABEL_SPACE,
    AgeBar,
    TierBand,
    age_bars,
    tier_bands,
)
from server.http.dashboard.curation import Supersession, supersession

__all__ = [
    "BrowsePage",
    "ConversationsPage",
    "DetailPage",
    "ForgettingPage",
    "JobLine",
    "OverviewPage",
    "browse_page",
    "conversations_page",
    "detail_page",
    "forgetting_page",
    "overview_page",
]

PAGE_SIZE = 50
# Hits a search shows. Not PAGE_SIZE: at 100k memories a search for 50 hits costs about twice
# one for 20 (hybrid, ten words: 135 against 70 ms; two words 44 against 17), as every mode
# widens its candidate lists with the limit, and nobody reads fifty ranked hits on a page.
SEARCH_SHOWN = 20
PRUNE_SHOWN = 50  # rows of the prune preview per page
PRUNE_COUNTED = 10_000  # the preview counts this far (~10 ms), then says "more than"
SESSIONS_SHOWN = 10  # each costs a stats read of its entries (~5-10 ms at 30 entries)


@dataclass(frozen=True)
class JobLine:
    """A scheduled job: when it runs next and how its last run in this process went."""

    name: str
    next_run: datetime | None
    last_finished: datetime | None
    last_result: str


@dataclass(frozen=True)
class OverviewPage:
    """Counts, charts, schedule and health of one project."""

    stats: StoreStats
    health: list[Advice]
    bands: list[TierBand]
    bars: list[AgeBar]
    max_days: int
    archived_days: float
    active_hours: float
    jobs: list[JobLine]
    model: str
    vectors: tuple[int, int] | None  # (with a vector, without), whole store

    @property
    def chart_bottom(self) -> int:
        """The y of the age chart's axis (its bars stand on it, their counts above them)."""
        return LABEL_SPACE + CHART_HEIGHT


@dataclass(frozen=True)
class BrowsePage:
    """A list of memories, or of search hits with their signals."""

    memories: list[Memory] = field(default_factory=list)
    hits: list[SearchHit] = field(default_factory=list)
    searched: bool = False
    mode: SearchMode | None = None
    notes: list[str] = field(default_factory=list)
    next_before: int | None = None
    tiers: dict[int, Tier] = field(default_factory=dict)  # each listed memory's tier now


@dataclass(frozen=True)
class DetailPage:
    """One memory, its live tier, its nearest neighbours, its history and supersession."""

    memory: Memory
    tier: Tier
    neighbours: list[tuple[Memory, float]]
    history: Supersession


ForgettingPage = PrunePreview


@dataclass(frozen=True)
class SessionLine:
    """One conversation session and its counts."""

    info: SessionInfo
    stats: SessionStats
    summaries: list[Summary]
    # With a summary asked of the client and not received: after how many more entries the
    # server stops waiting and writes a fallback summary itself (as compress_session says).
    pending_grace: int | None = None
    # The memory-state view, as memory://{project}/session/{id} and `memstrata session` give it.
    view: str = ""

    @property
    def cache(self) -> tuple[CachedResult, ...]:
        """The session's tool-result cache."""
        return self.stats.cache


@dataclass(frozen=True)
class ConversationsPage:
    """The most recently updated sessions."""

    sessions: list[SessionLine]


def _describe_run(app: AppContext, job_id: str) -> tuple[datetime | None, str]:
    run = app.runs.last.get(job_id)
    if run is None:
        return None, "not run since the server started"
    if run.failed:
        return run.finished, "failed (see the server log)"
    if run.skipped is not None:
        return run.finished, f"skipped: {run.skipped}"
    return run.finished, f"{run.result} rows"


async def overview_page(app: AppContext, project: str) -> OverviewPage:
    """The overview of `project`."""
    c = app.container
    tiers, pressure = c.settings.tiers, c.settings.pressure
    # The cap too, as get_memory_stats passes it: its finding belongs on the overview.
    report = await maintenance.memory_stats(c.repo, c.clock, tiers, project, pressure)
    max_days = int(tiers.archived_days) + 15
    ages = await maintenance.use_ages(c.repo, c.clock, project, max_days=max_days)
    jobs: list[JobLine] = []
    if app.scheduler is not None:
        for job in app.scheduler.get_jobs():
            finished, result = _describe_run(app, job.id)
            jobs.append(JobLine(job.id, job.next_run_time, finished, result))
    vectors = None
    if c.indexer is not None:
        vectors = await c.indexer.vectors.vector_stats()
    return OverviewPage(
        stats=report.stats,
        health=dashboard_advice(
            report.health, report.stats, tiers, pressure, scheduled=app.scheduler is not None
        ),
        bands=tier_bands(report.stats.by_tier),
        bars=age_bars(ages, tiers, report.stats.by_tier),
        max_days=max_days,
        archived_days=tiers.archived_days,
        active_hours=tiers.active_hours,
        jobs=jobs,
        model=c.embedder.model_id if c.embedder is not None else "none (keyword search only)",
        vectors=vectors,
    )


async def browse_page(
    app: AppContext,
    project: str,
    *,
    text: str | None,
    mode: SearchMode,
    layer: Layer | None,
    tier: Tier | None,
    session_id: str | None,
    before_id: int | None,
    tags: tuple[str, ...] = (),
) -> BrowsePage:
    """The memories of `project` newest first, or the hits of a search for `text`.

    `tags` keeps only memories holding every one of them (as the tools' filter).
    """
    memories = app.container.memories
    if text:
        result = await memories.search(
            SearchRequest(
                project=project,
                query=text,
                mode=mode,
                layer=layer,
                session_id=session_id,
                tags=tags,
                limit=SEARCH_SHOWN,
                mark_used=False,
            )
        )
        # Search has no tier filter (tiers only weigh the ranking); narrowing its hits by the
        # tier each was ranked with keeps the page's filters meaning the same thing.
        hits = [h for h in result.hits if tier is None or h.signals.tier is tier]
        return BrowsePage(hits=hits, searched=True, mode=result.mode, notes=result.notes)
    rows = await memories.browse(
        BrowseQuery(
            project=project,
            layer=layer,
            tier=tier,
            session_id=session_id,
            before_id=before_id,
            tags=tags,
            limit=PAGE_SIZE,
        )
    )
    cutoffs = tier_cutoffs(app.container.clock.now(), app.container.settings.tiers)
    return BrowsePage(
        memories=rows,
        next_before=rows[-1].id if len(rows) == PAGE_SIZE else None,
        # The live tier, as the filter and the stats use: the stored one waits for the next
        # recalculation.
        tiers={m.id: classify_tier(m.reference_time, cutoffs) for m in rows},
    )


async def detail_page(app: AppContext, project: str, memory_id: int) -> DetailPage:
    """One memory of `project`, not marked as used.

    Raises:
        MemoryNotFoundError: No such memory in the project.
    """
    c = app.container
    memory = await c.memories.peek(project, memory_id)
    tier = classify_tier(memory.reference_time, tier_cutoffs(c.clock.now(), c.settings.tiers))
    return DetailPage(
        memory=memory,
        tier=tier,
        neighbours=await c.memories.neighbours(memory),
        history=await supersession(app, memory),
    )


async def forgetting_page(
    app: AppContext, project: str, after: tuple[datetime, int] | None
) -> ForgettingPage:
    """A page (PRUNE_SHOWN rows after `after`) of what a prune of `project` would delete now.

    Its cost does not grow with the store (memory_core.services.prune_preview): at 100k
    memories, half of them expired, the former page (the dry run's first 200, the stats, and
    200 lookups) cost 170 ms and grew with the expired rows.
    """
    c = app.container
    return await prune_preview(
        c.repo,
        c.clock,
        c.settings.tiers,
        project,
        after=after,
        limit=PRUNE_SHOWN,
        count_cap=PRUNE_COUNTED,
    )


async def run_prune(app: AppContext, project: str) -> list[int]:
    """Prune `project` as `prune_expired_contexts` does; returns the ids deleted."""
    c = app.container
    outcome = await maintenance.prune_expired(c.repo, c.clock, c.settings.tiers, project=project)
    return outcome.ids


# The view's "what get_session_context hands the model now" part, cut for a page of sessions.
VIEW_TOKENS = 1500


async def conversations_page(app: AppContext, project: str) -> ConversationsPage:
    """The latest sessions of `project` with their counts, summaries and cached results."""
    from memory_core.services.session_state import SessionStateService, session_view_text

    conversations = app.container.conversations
    backend = app.container.backend
    state = SessionStateService(conversations, backend.conversations) if backend else None
    lines = []
    for info in await conversations.list_sessions(project, SESSIONS_SHOWN):
        stats = await conversations.stats(project, info.session_id)
        summaries = await conversations.summaries(project, info.session_id)
        grace = None
        if info.pending is not None:
            policy = await conversations.policy(project, info.session_id)
            waited = info.last_entry - info.pending.requested_at_entry
            grace = max(policy.client_summary_grace - waited + 1, 1)
        view = ""
        if state is not None:
            read = await state.read(project, info.session_id, VIEW_TOKENS)
            view = session_view_text(read)
        lines.append(
            SessionLine(info=info, stats=stats, summaries=summaries, pending_grace=grace, view=view)
        )
    return ConversationsPage(sessions=lines)
