"""`memstrata projects`: this directory's project, and its memories saved under its folder name.

`memstrata projects` shows the project the server, the hooks and the CLI use here (its
display name and the identity it stands for) and, when a project of the old folder-named
rule still holds rows, where its sessions started and whether they are provably this
project's. `memstrata projects adopt` moves them here when they are (the session-start hook
does the same on a checkout's first session); `--force` moves them when they are not
provably this project's, as the person's own decision (server.project.adoption).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memory_core.ports.project_moves import ProjectMoves
from server.cli.output import Exit, err
from server.project.adoption import Adoption, adopt, plan_adoption
from server.project.scope import Scope, identity_of
from server.settings import Settings

__all__ = ["add_parser", "open_project_moves", "run_command"]

_EXAMPLES = """examples:
  memstrata projects                  # this checkout's project and its old folder-named one
  memstrata projects adopt            # move the old one here when it is provably this one's
  memstrata projects adopt --force    # move it even so (its sessions started elsewhere too)
  MEMSTRATA_PROJECT_SCOPE=path memstrata projects   # as with clones and worktrees apart
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `projects` on the `memstrata` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "projects",
        help="this directory's project, and adopting memories saved under its folder name",
        description=textwrap.fill(
            "Show the project of this directory as the server, the hooks and the CLI name it "
            "(MEMSTRATA_PROJECT_SCOPE, `git` unless set): `<name>@<remote>` for a checkout "
            "with a remote, else the name and a hash of its path. Earlier versions named a "
            "checkout after its folder alone; `adopt` moves such a project's memories here "
            "when every session of it started in this project (--force: even when not).",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", nargs="?", choices=("show", "adopt"), default="show")
    parser.add_argument(
        "--force", action="store_true", help="adopt even when some sessions started elsewhere"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    return parser


def _scope(settings: Settings) -> Scope:
    """The scope set in the environment, else `git` (what the plugin and setup run with)."""
    return settings.project_scope if "project_scope" in settings.model_fields_set else "git"


@asynccontextmanager
async def open_project_moves(settings: Settings) -> AsyncIterator[ProjectMoves]:
    """ProjectMoves on the configured store, migrated first, on a connection of its own."""
    if settings.database_url:
        from memory_core.storage import postgres
        from memory_core.storage.postgres.project_moves import PostgresProjectMoves

        store = await postgres.open_store(settings.database_url, pool_max=2)
        try:
            yield PostgresProjectMoves(postgres.PostgresSession(store.pool))
        finally:
            await store.close()
        return
    from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
    from memory_core.storage.sqlite.project_moves import SqliteProjectMoves

    db = await open_database(settings.db)
    try:
        await apply_migrations(db)
        yield SqliteProjectMoves(SqliteSession(db))
    finally:
        await db.close()


async def _run(settings: Settings, args: argparse.Namespace, cwd: Path) -> Adoption:
    scope = _scope(settings)
    async with open_project_moves(settings) as moves:
        if args.action == "adopt":
            return await adopt(moves, scope, cwd, force=args.force)
        return await plan_adoption(moves, scope, cwd)


def run_command(settings: Settings, args: argparse.Namespace, cwd: Path | None = None) -> int:
    """Show or adopt; exit 1 when `adopt` moved nothing that was there to move."""
    where = (cwd or Path.cwd()).resolve()
    scope = _scope(settings)
    if scope == "fixed":
        err(f"memstrata: MEMSTRATA_PROJECT_SCOPE=fixed: every directory uses {settings.project}")
        return Exit.USAGE
    if not settings.database_url and not settings.db.exists():
        result = Adoption(project=identity_of(scope, where).name, legacy=None, verdict="none")
    else:
        result = asyncio.run(_run(settings, args, where))
    found = identity_of(scope, where)
    if args.json:
        sys.stdout.write(json.dumps(_as_json(result, found.display, found.identity, scope)) + "\n")
    else:
        sys.stdout.write(_as_text(result, found.display, found.identity, scope, args.action))
    refused = args.action == "adopt" and result.verdict in ("shared", "unproven")
    return Exit.ERROR if refused else Exit.OK


def _as_json(result: Adoption, display: str, identity: str, scope: Scope) -> dict[str, Any]:
    move = result.move
    return {
        "project": result.project,
        "display": display,
        "identity": identity,
        "scope": scope,
        "legacy": result.legacy,
        "verdict": result.verdict,
        "directories": sorted(result.directories),
        "foreign": list(result.foreign),
        "moved": None if move is None else vars(move),
    }


_VERDICTS = {
    "none": "",
    "safe": "every session of it started in this project: `memstrata projects adopt` moves "
    "it here (the first session here does too)",
    "shared": "some of its sessions started elsewhere (above), so its memories may not be "
    "this checkout's: nothing moves by itself; `memstrata projects adopt --force` moves "
    "them here anyway",
    "unproven": "some of its sessions recorded no directory, so where its memories came from "
    "is unknown: nothing moves by itself; `memstrata projects adopt --force` moves them "
    "here anyway",
    "adopted": "moved here",
}


def _as_text(result: Adoption, display: str, identity: str, scope: Scope, action: str) -> str:
    lines = [f"project: {result.project}  ({display}; {identity}; scope {scope})"]
    if result.legacy is None:
        lines.append("no memories under an older folder-named project to adopt")
        return "\n".join(lines) + "\n"
    lines.append(f"older folder-named project: {result.legacy}")
    if result.directories:
        lines.append("  its sessions started in:")
        lines.extend(
            f"    {d}" + ("  (not this project now)" if d in result.foreign else "")
            for d in sorted(result.directories)
        )
    lines.append(f"  {_VERDICTS[result.verdict]}")
    if result.move is not None:
        m = result.move
        lines.append(
            f"  moved {m.memories} memories, {m.sessions} conversations and "
            f"{m.hook_sessions} hook sessions"
            + (
                f"; {m.memories_kept} memories and {m.sessions_kept} conversations this project "
                f"already held stay under {result.legacy}"
                if m.memories_kept or m.sessions_kept
                else ""
            )
        )
    elif action == "adopt" and result.verdict != "safe":
        lines.append("  nothing moved")
    return "\n".join(lines) + "\n"
