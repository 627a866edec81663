"""The `memstrata` console script: `memstrata hook ...` before anything heavy is imported.

Claude Code runs a hook as a fresh process on every prompt, so its import path must stay
lean: server.cli (and the services and rich output it reaches) loads only for other commands.
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
    from server.cli import main as cli_main

    cli_main(argv)
