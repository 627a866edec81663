"""The `memstrata` console script: `memstrata hook ...` before anything heavy is imported.

Claude Code runs a hook as a fresh process on every prompt, so its import path must stay
lean: server.cli.commands (and the services and rich output it reaches) loads only for other
commands.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from collections.abc import Mapping, Sequence

from server.early_env import env_values, uses_postgres

__all__ = ["main"]


def _no_pydantic_plugins() -> None:
    """Let pydantic find no plugins without looking (~20 ms of a cold hook or `stats`).

    Building its first model, pydantic imports its plugin loader, which imports
    importlib.metadata (with email, zipfile and csv: most of the cost) to read every installed
    package's entry points for `pydantic` plugins. memstrata uses none, so a short-lived
    command gets a loader that finds none, as PYDANTIC_DISABLE_PLUGINS=__all__ would, but
    without the import. `serve` keeps pydantic's own (the MCP SDK reads package metadata
    anyway). tests/server/test_import_boundaries.py holds the hooks and `stats` to it.
    """
    loader = types.ModuleType("pydantic.plugin._loader")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules.setdefault("pydantic.plugin._loader", loader)


def _structlog_without_rich() -> None:
    """Import structlog while rich and greenlet are hidden: it then neither loads nor uses them.

    At import, structlog loads rich's console and pretty printer (~25 ms cold) when it can,
    to render console tracebacks and the locals of JSON tracebacks. A command's logs are JSON
    lines, whose locals then print with repr(); its tables import rich when they print.
    Its deprecated thread-local context loads greenlet (a C extension) when installed;
    memstrata binds context with contextvars.
    """
    if "structlog" in sys.modules or "rich" in sys.modules:
        return
    hidden = [name for name in ("rich", "greenlet") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import structlog  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]


def _console_logs(environ: Mapping[str, str]) -> bool:
    """Whether MEMSTRATA_LOG_FORMAT asks for console lines (server.settings validates it)."""
    return "console" in env_values(environ, "MEMSTRATA_LOG_FORMAT")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `memstrata` console script."""
    # Start-up mostly creates long-lived objects (modules, classes, validators), and the cyclic
    # collector's passes over them cost ~3% of a cold hook's instructions. A hook and
    # the one-shot queries (server.cli.commands.ONE_SHOT) keep it off until they exit; every
    # other command turns it back on before it runs, `serve` once it has answered `tools/list`.
    gc.disable()
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "serve")  # bare: serve
    if command == "stats":
        # From the kept counts when that is certainly the full answer, without pydantic,
        # asyncio, structlog or rich (issue 21); None: the full path below runs unchanged.
        from server.cli.lean_stats import lean_stats

        code = lean_stats(args, os.environ)
        if code is not None:
            sys.exit(code)
    if command != "serve" and "pydantic" not in sys.modules:
        _no_pydantic_plugins()
    if args[:1] == ["hook"]:
        from server.hooks.entry import run

        run(args[1:])
    if command == "stats" and not uses_postgres(os.environ):
        # asyncio imports ssl (~2% of a cold `stats`) for TLS connections and handles its
        # absence; stats on the SQLite file opens none (the hooks do the same, hooks.entry).
        sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]
    if command == "serve":
        from memory_core.embeddings.malloc_arenas import cap_malloc_arenas
        from server.cli.lean_serve import start_lean_stdio, starts_stdio

        # Before any thread exists: a long-lived server keeps freed memory in per-thread
        # arenas otherwise (352 -> 374 MB over 3,000 searches at 100k; 2 arenas: 332-345 MB).
        cap_malloc_arenas()

        if starts_stdio(args):
            # First, before the SDK's import: the client's opening requests are answered
            # from the last start's answers while the rest loads (server.cli.lean_serve).
            start_lean_stdio(args, os.environ)
    if command == "serve" and not _console_logs(os.environ):
        # A server logging JSON lines needs no rich: structlog would import its console,
        # pretty printer and tracebacks (with pygments), and the SDK's MCPServer() a
        # RichHandler that configure_logging replaces at once (~25% of what `serve` adds to
        # the SDK's own import before its first `tools/list`). Without rich, both fall back.
        sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
    elif args[:1] != ["serve"]:
        # structlog imports rich.traceback (with pygments) at import time to format exceptions
        # in console logs, ~100 ms of a cold command that prints one table; a command's logs
        # are JSON, and its exceptions print fine without it. Tables still use rich.
        sys.modules.setdefault("rich.traceback", None)  # type: ignore[arg-type]
        _structlog_without_rich()
    from server.cli.commands import main as cli_main

    cli_main(argv)
