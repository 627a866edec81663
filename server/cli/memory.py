"""CLI commands over the memory services: stats, search, recall, maintain, reindex.

`stats` is a cold process people and scripts run often (issue 21: under 250 ms), so it opens
only the store and the maintenance service; the others open the whole composition root. Each
command imports what it uses when it runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memory_core.domain.models import Layer, SearchMode
from server.cli.output import Exit, err, out_json, progress_bar, stdout_console
from server.settings import Settings

if TYPE_CHECKING:
    from memory_core.services.maintenance import MaintenanceService

__all__ = [
    "cli_project",
    "run_maintain",
    "run_recall",
    "run_reindex",
    "run_search",
    "run_stats",
]


async def run_stats(settings: Settings, args: argparse.Namespace) -> int:
    """Tiers and layers per project: the named one, else every project in the store.

    Opens the backend and the maintenance service only (not the composition root, whose
    services stats never uses), but refuses a store indexed by another model as every
    command does; the model itself is not loaded.
    """
    from memory_core.clock import SystemClock
    from memory_core.services.maintenance import MaintenanceService
    from server.backends import open_backend
    from server.schemas.stats import StatsOut

    async with open_backend(settings) as backend:
        spec = settings.embedding
        if spec.kind != "none":  # as open_container: SchemaMismatchError names `reindex`
            await backend.vectors(settings.vector_exact_max).ensure_model(spec.model_id, spec.dims)
        # The line open_container logs, so `-v` / MEMSTRATA_LOG_LEVEL show the same.
        backend.log_opened(spec.model_id if spec.kind != "none" else "none")
        maintenance = MaintenanceService(
            repo=backend.repo,
            clock=SystemClock(),
            policy=settings.tiers,
            pressure=settings.pressure,
        )
        names = [args.project] if args.project else await backend.repo.projects()
        if not names:
            names = [settings.default_project()]  # an empty store: show the default project's zeros
        reports = [StatsOut.of(await maintenance.stats(name)) for name in names]
    from server.cli.stats_output import stats_json, stats_table

    found = [r.model_dump(mode="json") for r in reports]
    render = stats_json if args.json else stats_table
    sys.stdout.write(render(str(settings.db), found) + "\n")
    return Exit.OK


def cli_project(settings: Settings, named: str | None, cwd: Path | None = None) -> str:
    """The project a terminal command is about: the one named, else this directory's.

    Inside a git checkout that is the checkout's project, as the plugin's and setup's server
    and hooks (MEMSTRATA_PROJECT_SCOPE=git) name it there, so `memstrata search` in a
    repository finds what Claude Code stored for it. An explicit MEMSTRATA_PROJECT or
    MEMSTRATA_PROJECT_SCOPE in the environment keeps its meaning; outside git the default
    project stays MEMSTRATA_PROJECT.
    """
    from server.project.scope import git_root

    if named is not None:
        return named
    where = cwd or Path.cwd()
    chosen = {"project", "project_scope"} & settings.model_fields_set
    if not chosen and git_root(where) is not None:
        return settings.model_copy(update={"project_scope": "git"}).default_project(where)
    return settings.default_project(where)


async def run_search(settings: Settings, args: argparse.Namespace) -> int:
    """The `search` tool from a terminal (hits are marked as used, as for a client)."""
    from rich.table import Table

    from memory_core.services.memories import SearchRequest
    from server.container import open_container
    from server.schemas.memories import SearchOut

    project = cli_project(settings, args.project)
    async with open_container(settings) as c:
        if c.embedder is not None and args.mode != "keyword":
            # A one-shot command has no server start-up to hide the model load behind.
            c.embedder.start()
            await c.embedder.until_ready()
        result = await c.memories.search(
            SearchRequest(
                project=project,
                query=args.query,
                mode=SearchMode(args.mode),
                layer=Layer(args.layer) if args.layer else None,
                session_id=args.session,
                limit=args.limit,
            )
        )
    found = SearchOut.of(args.query, result, explain=True)  # the table shows tier and score
    if args.json:
        out_json(found)
        return Exit.OK
    searched = f"for {args.query!r} in project {project} ({found.mode})"
    console = stdout_console()
    if not found.hits:  # one line, not an empty table: which project was searched matters most
        console.print(f"0 hits {searched}", markup=False)
        for note in found.notes:
            console.print(f"note: {note}", markup=False)
        return Exit.OK
    table = Table(title=f"{found.count} hit(s) {searched}")
    for name, justify in (("id", "right"), ("layer", "left"), ("tier", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    # match: the absolute strength the tools and hooks show (strong/partial/weak); score only
    # orders the hits of this one search.
    table.add_column("match")
    table.add_column("score", justify="right")
    table.add_column("key")
    table.add_column("content", overflow="fold")
    for h in found.hits:
        table.add_row(
            str(h.id),
            h.layer.value,
            h.tier.value if h.tier else "",
            h.match.value,
            f"{h.score or 0:.3f}",
            h.key or "",
            h.content,
        )
    console.print(table)
    for note in found.notes:
        console.print(f"note: {note}", markup=False)
    return Exit.OK


async def run_recall(settings: Settings, args: argparse.Namespace) -> int:
    """The `recall` tool from a terminal; exit 3 when no fact is stored under the key."""
    from rich.table import Table

    from server.container import open_container
    from server.schemas.memories import RecallOut

    project = cli_project(settings, args.project)
    async with open_container(settings) as c:
        result = await c.memories.recall(project, args.key)
    recalled = RecallOut.of(result, whole=True)  # the table shows the stored record
    if args.json:
        out_json(recalled)
    else:
        console = stdout_console()
        if recalled.memory is not None:
            table = Table(title=f"{recalled.key} (id {recalled.memory.id})", show_header=False)
            table.add_column("field")
            table.add_column("value", overflow="fold")
            table.add_row("value", recalled.memory.content)
            table.add_row("tier", recalled.memory.tier.value)
            table.add_row("updated", recalled.memory.updated_at.isoformat())
            table.add_row("accessed", str(recalled.memory.access_count))
            console.print(table)
        else:
            console.print(f"{recalled.message} (project {project})", markup=False)
        if recalled.rules:
            rules = Table(title="procedural rules that apply")
            rules.add_column("id", justify="right")
            rules.add_column("when")
            rules.add_column("do", overflow="fold")
            for rule in recalled.rules:
                rules.add_row(str(rule.id), rule.condition, rule.action)
            console.print(rules)
    return Exit.OK if recalled.found else Exit.NOT_FOUND


async def run_maintain(settings: Settings, args: argparse.Namespace) -> int:
    """Recalculate tiers, prune EXPIRED memories and/or enforce the storage cap (--cap).

    Across projects unless one is named.
    """
    cap = bool(getattr(args, "cap", False))
    if not (args.recalculate or args.prune or cap):
        err("nothing to do: give --recalculate, --prune and/or --cap")
        return Exit.USAGE
    from server.container import open_container

    result: dict[str, object] = {}
    async with open_container(settings) as c:
        if args.recalculate:
            result["tiers_changed"] = await c.maintenance.recalculate_tiers(args.project)
        if args.prune:
            with progress_bar("prune") as bar:
                outcome = await c.maintenance.prune_expired(
                    project=args.project,
                    limit=args.limit,
                    dry_run=args.dry_run,
                    progress=None if args.dry_run else bar,
                )
            result["would_prune" if args.dry_run else "pruned"] = len(outcome.ids)
            if args.dry_run:
                result["ids"] = outcome.ids
        if cap:
            result["cap"] = await _enforce_cap(c.maintenance, args.project, args.dry_run)
    if args.json:
        out_json(result)
        return Exit.OK
    _print_maintained(result, args.dry_run)
    return Exit.OK


def _print_maintained(result: dict[str, object], dry_run: bool) -> None:
    """What `maintain` did, as lines for a person."""
    console = stdout_console()
    if "tiers_changed" in result:
        console.print(f"tiers recalculated: {result['tiers_changed']} memories changed tier")
    if "pruned" in result:
        console.print(f"pruned: {result['pruned']} EXPIRED memories deleted")
    if "would_prune" in result:
        console.print(
            f"dry run: {result['would_prune']} EXPIRED memories would be deleted "
            f"(ids {result['ids']})",
            markup=False,
        )
    for line in _cap_lines(result.get("cap"), dry_run):
        console.print(line, markup=False)


async def _enforce_cap(
    maintenance: MaintenanceService, project: str | None, dry_run: bool
) -> list[dict[str, object]]:
    """The storage cap enforced (or previewed) for one project, or every project over it."""
    if project is not None:
        outcomes = [await maintenance.enforce_cap(project, dry_run=dry_run)]
    else:
        outcomes = await maintenance.enforce_caps(dry_run=dry_run)
    return [
        {
            "project": o.project,
            "cap": o.cap,
            "size": o.size,
            "target": o.target,
            "would_delete" if dry_run else "deleted": len(o.ids),
            "archived": o.archived,
            "short": o.short,
            "ids": o.ids,
        }
        for o in outcomes
    ]


def _cap_lines(found: object, dry_run: bool) -> list[str]:
    """What `maintain --cap` prints: one line per project over the cap."""
    if not isinstance(found, list):
        return []
    lines = []
    for p in found:
        if p["cap"] is None or p["size"] <= p["cap"]:
            continue
        done = f"{p['would_delete']} would be deleted" if dry_run else f"{p['deleted']} deleted"
        short = f", {p['short']} more may not go" if p["short"] else ""
        lines.append(f"cap: {p['project']} holds {p['size']} (cap {p['cap']}): {done}{short}")
    return lines or ["cap: no project is over the storage cap"]


async def run_reindex(settings: Settings, args: argparse.Namespace) -> int:
    """Drop every vector, record the configured model and embed every memory again."""
    if settings.embedding.kind == "none":
        err("MEMSTRATA_EMBEDDING_MODEL is 'none': there is no model to index with")
        return Exit.USAGE
    from server.container import open_container

    async with open_container(settings, check_model=False) as c:
        assert c.embedder is not None  # kind != "none"
        assert c.indexer is not None
        embedder = await c.embedder.wait()
        await c.indexer.vectors.reset_model(embedder.model_id, embedder.dims)
        with progress_bar("reindex") as bar:
            count = await c.indexer.backfill(
                embedder, batch_size=args.batch_size, progress=bar.update
            )
    if args.json:
        out_json({"model": settings.embedding.model_id, "embedded": count})
    else:
        stdout_console().print(
            f"reindexed: {count} memories embedded with {settings.embedding.model_id}",
            markup=False,
        )
    return Exit.OK
