"""Tools that inspect and maintain the store."""

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_core.domain.models import PruneOutcome
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.memories import PruneOut, RecalculateOut
from server.schemas.stats import StatsOut
from server.settings import Settings
from server.tools import Project, container, tool
from server.tools.progress import progress_reporter
from server.toolsets import Toolset

__all__ = ["register"]


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register get_memory_stats, recalculate_memory_tiers and prune_expired_contexts."""

    @tool(
        mcp,
        toolset=Toolset.MAINTENANCE,
        title="Memory statistics",
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def get_memory_stats(
        ctx: Context[AppContext],
        project: Project = None,
    ) -> StatsOut:
        """Count memories per tier and layer, with sizes, dates and health suggestions."""
        app = container(ctx)
        report = await app.maintenance.stats(app.project(project))
        return StatsOut.of(report)

    @tool(
        mcp,
        toolset=Toolset.MAINTENANCE,
        title="Recalculate memory tiers",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    async def recalculate_memory_tiers(
        ctx: Context[AppContext],
        project: Annotated[
            str | None, Field(description=("Only this project; omit to recalculate every project."))
        ] = None,
    ) -> RecalculateOut:
        """Re-derive every memory's tier (ACTIVE/RECENT/ARCHIVED/EXPIRED) from its last use."""
        app = container(ctx)
        changed = await app.maintenance.recalculate_tiers(project)
        return RecalculateOut(scope=project or "*", changed=changed)

    @tool(
        mcp,
        toolset=Toolset.MAINTENANCE,
        title="Prune expired memories",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def prune_expired_contexts(
        ctx: Context[AppContext],
        limit: Annotated[
            int | None,
            Field(
                ge=1,
                le=2**63 - 1,
                description="At most this many (least read, then oldest, first); omit for all.",
            ),
        ] = None,
        dry_run: Annotated[
            bool, Field(description=("List what would be deleted without deleting."))
        ] = False,
        project: Project = None,
        over_cap: Annotated[
            bool,
            Field(description="Only what brings the project back under its storage cap."),
        ] = False,
    ) -> PruneOut:
        """Delete memories unused for longer than the EXPIRED threshold (30 days by default).

        Only EXPIRED memories are deleted; tiers are recomputed first, so anything used
        recently is safe. Try dry_run=true first, and ask the user before deleting. Reports
        progress if the client asks.
        """
        app = container(ctx)
        name = app.project(project)
        if over_cap:
            # The storage cap (issue 33.4): least used first, down to its low-water mark;
            # ARCHIVED ones too only if the operator allowed it. `limit` does not apply.
            capped = await app.maintenance.enforce_cap(
                name,
                dry_run=dry_run,
                progress=progress_reporter(ctx, "deleted {done} of {total} over the cap"),
            )
            outcome = PruneOutcome(ids=capped.ids, dry_run=dry_run)
        else:
            outcome = await app.maintenance.prune_expired(
                project=name,
                limit=limit,
                dry_run=dry_run,
                progress=progress_reporter(ctx, "pruned {done} of {total} expired memories"),
            )
        return PruneOut(
            project=name,
            dry_run=dry_run,
            deleted=0 if dry_run else len(outcome.ids),
            ids=outcome.ids,
        )
