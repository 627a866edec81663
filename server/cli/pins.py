"""`memstrata pin` and `memstrata unpin`: keep memories for good, or let them age again."""

from __future__ import annotations

import argparse
from typing import Any

from server.settings import Settings

__all__ = ["add_parser", "run_command"]


def add_parser(subparsers: Any) -> None:
    """Register `pin` and `unpin` on the `memstrata` command's subparsers."""
    for name, what in (
        ("pin", "pin memories: they never expire and are never pruned"),
        ("unpin", "unpin memories: they age and can be pruned like the others again"),
    ):
        parser: argparse.ArgumentParser = subparsers.add_parser(name, help=what, description=what)
        parser.add_argument("ids", type=int, nargs="+", metavar="ID", help="memory ids")
        parser.add_argument("--project", "-p", help="the project (default: this directory's)")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


async def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """Pin or unpin the memories named; exit 3 when none of them is in the project."""
    from memory_core.errors import MemoryNotFoundError
    from memory_core.services.truth import TruthService
    from server.cli.memory import cli_project
    from server.cli.output import Exit, out_json, stdout_console
    from server.container import open_container
    from server.schemas.truth import PinOut

    project = cli_project(settings, args.project)
    pinned = args.command == "pin"
    async with open_container(settings) as c:
        try:
            found = await TruthService(c.memories).pin(project, args.ids, pinned=pinned)
        except MemoryNotFoundError:
            found = []
    done = [m.id for m in found]
    out = PinOut(pinned=pinned, ids=done, missing=[i for i in args.ids if i not in done])
    if args.json:
        out_json(out)
    else:
        stdout_console().print(
            out.as_text() if done else f"no such memory in {project}", markup=False
        )
    return Exit.OK if done else Exit.NOT_FOUND
