"""The `memstrata` console script: `memstrata hook ...` before anything heavy is imported.

Claude Code runs a hook as a fresh process on every prompt, so its import path must stay
lean: server.cli.commands (and the services and rich output it reaches) loads only for other
commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `memstrata` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from server.hooks.entry import run

        run(args[1:])
    if args[:1] != ["serve"]:
        # structlog imports rich.traceback (with pygments) at import time to format exceptions
        # in console logs, ~100 ms of a cold command that prints one table; a command's logs
        # are JSON, and its exceptions print fine without it. Tables still use rich.
        sys.modules.setdefault("rich.traceback", None)  # type: ignore[arg-type]
    from server.cli.commands import main as cli_main

    cli_main(argv)
