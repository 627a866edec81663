"""How the CLI talks to a person: rich tables on stdout, progress on stderr, exit codes.

Only CLI commands use this module; `memstrata serve` never does, because in stdio mode stdout
belongs to MCP. Colours and live bars appear only on a terminal (and never with NO_COLOR).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "Exit",
    "ProgressSink",
    "err",
    "out_json",
    "progress_bar",
    "stderr_console",
    "stdout_console",
]


class Exit(IntEnum):
    """Exit codes of every `memstrata` command (documented in `memstrata --help`)."""

    OK = 0
    ERROR = 1  # the command failed (storage, embedding model, bad data)
    USAGE = 2  # bad arguments or MEMSTRATA_* configuration
    NOT_FOUND = 3  # what was asked for does not exist (recall: no such key; import: no file)
    PROBLEMS = 4  # doctor found at least one failing check; backup failed verification
    EXISTS = 5  # refused to overwrite an existing file (backup without --force)
    CANNOT_LISTEN = 6  # serve --http: the port is in use or the address may not be bound
    INTERRUPTED = 130  # Ctrl-C


# Columns assumed for a pipe or a file: rich would assume 80 and cut headers to "pro…"; a
# table never pads to this width, it only stops cutting and wrapping.
_UNBOUNDED_WIDTH = 1000


def stdout_console() -> Console:
    """Results go to stdout; on a non-terminal (a pipe, a file) no colour and no markup codes.

    Off a terminal, tables keep their natural width (`memstrata stats | cat`) unless COLUMNS
    says otherwise.
    """
    from rich.console import Console  # rich loads when a command prints, not at its import

    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    width = _UNBOUNDED_WIDTH if piped else None
    # markup=False: a memory's text is data, and rich would eat "[rt1]" in `CALL[rt1]` as a tag.
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=width, markup=False)


def stderr_console() -> Console:
    """Messages and progress bars go to stderr, so stdout stays clean for results."""
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, markup=False)


def err(text: str) -> None:
    """One plain line on stderr (no markup interpretation: paths may hold brackets)."""
    sys.stderr.write(text + "\n")


def out_json(value: BaseModel | dict[str, object] | list[object]) -> None:
    """A JSON document on stdout, for scripts."""
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        import json

        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(text + "\n")


class ProgressSink:
    """A (done, total) progress callback, awaitable for services and plain for the indexer."""

    def __init__(self, label: str, update: Callable[[int, int], None]) -> None:
        self.label = label
        self._update = update

    def update(self, done: int, total: int) -> None:
        """Report progress synchronously."""
        self._update(done, total)

    async def __call__(self, done: int, total: int) -> None:
        """Report progress (the awaitable form services take)."""
        self._update(done, total)


@contextmanager
def progress_bar(label: str) -> Iterator[ProgressSink]:
    """A live bar on a terminal's stderr, else one plain stderr line per 10% of the work."""
    console = stderr_console()
    if console.is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as bar:
            task = bar.add_task(label, total=None)
            yield ProgressSink(
                label, lambda done, total: bar.update(task, completed=done, total=total)
            )
        return
    last = [-1]

    def line(done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent // 10 != last[0] // 10 or (done >= total and last[0] != percent):
            err(f"{label}: {done}/{total} ({percent}%)")
        last[0] = percent

    yield ProgressSink(label, line)
