"""`memstrata session`: a conversation session's memory state, as the session resource shows it."""

from __future__ import annotations

import argparse
from typing import Any

from server.settings import Settings

__all__ = ["add_parser", "run_command"]

DESCRIPTION = (
    "Print a conversation session's memory state: entries active and compressed, the "
    "summaries with their sizes and ratios, the compressions by source, the cached tool "
    "results with the exchanges they have left, the token totals and the text "
    "get_session_context hands the model now (the resource memory://PROJECT/session/ID shows "
    "the same). Without ID, list the project's most recently written sessions."
)


def add_parser(subparsers: Any) -> None:
    """Register `session` on the `memstrata` command's subparsers."""
    what = "show a conversation session's memory state"
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "session",
        help=what,
        description=DESCRIPTION,
        epilog="examples:\n  memstrata session\n  memstrata session 3f2a9c --budget 2000\n"
        "  memstrata session 3f2a9c --project billing --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("session_id", nargs="?", metavar="ID", help="the session's id")
    parser.add_argument("--project", "-p", help="the project (default: this directory's)")
    parser.add_argument(
        "--budget", type=int, metavar="TOKENS", help="cut the context shown to about this many"
    )
    parser.add_argument(
        "--limit", type=int, default=20, help="sessions listed without ID (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


async def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """Print one session's state, or list the project's sessions; exit 3: no such session."""
    from memory_core.errors import SessionNotFoundError
    from memory_core.services.session_state import SessionStateService, session_view_text
    from server.cli.memory import cli_project
    from server.cli.output import Exit, err, out_json, stdout_console
    from server.container import open_container

    project = cli_project(settings, args.project)
    if args.budget is not None and args.budget < 1:
        err("memstrata session: --budget must be at least 1")
        return Exit.USAGE
    async with open_container(settings) as c:
        assert c.backend is not None
        if args.session_id is None:
            sessions = await c.conversations.list_sessions(project, max(1, args.limit))
            rows = [
                {"session_id": s.session_id, "entries": s.last_entry, "updated_at": s.updated_at}
                for s in sessions
            ]
            if args.json:
                out_json({"project": project, "sessions": rows})
            else:
                lines = [
                    f"{r['session_id']}  {r['entries']} entries  {r['updated_at']}" for r in rows
                ]
                stdout_console().print(
                    "\n".join(lines) if lines else f"no sessions in {project}", markup=False
                )
            return Exit.OK
        service = SessionStateService(c.conversations, c.backend.conversations)
        try:
            state = await service.read(project, args.session_id, args.budget)
        except SessionNotFoundError:
            err(f"memstrata session: no session {args.session_id!r} in {project}")
            return Exit.NOT_FOUND
    text = session_view_text(state)
    if args.json:
        stats = state.stats
        out_json(
            {
                "project": project,
                "session_id": state.info.session_id,
                "total_entries": stats.total_entries,
                "active_entries": stats.active_entries,
                "compressed_entries": stats.compressed_entries,
                "summaries": [
                    {
                        "id": s.id,
                        "entry_ids": list(s.entry_ids),
                        "bytes": len(s.text.encode()),
                        "tokens": s.token_count,
                        "original_tokens": s.original_tokens,
                        "ratio": s.ratio,
                        "source": s.source,
                    }
                    for s in state.summaries
                ],
                "total_tokens": stats.total_tokens,
                "active_tokens": stats.active_tokens,
                "exchanges": stats.exchanges,
                "cache": [c.describe() for c in stats.cache],
                "context_tokens": state.context.tokens,
                "view": text,
            }
        )
    else:
        stdout_console().print(text, markup=False, highlight=False)
    return Exit.OK
