"""The `memstrata` command: serve, migrate, maintain and inspect from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from pydantic import ValidationError
from pydantic_settings import SettingsError

from memory_core.errors import MemoryCoreError
from memory_core.services import maintenance
from server.container import open_container
from server.logging import configure_logging
from server.settings import Settings

__all__ = ["main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memstrata",
        description="Long-term memory for AI clients (an MCP server on one SQLite file). "
        "Configuration comes from MEMSTRATA_* environment variables.",
    )
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the MCP server (stdio unless --http)")
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp")
    serve.add_argument("--host", help="HTTP interface (default MEMSTRATA_HTTP_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default MEMSTRATA_HTTP_PORT, 8765)")
    sub.add_parser("migrate", help="create or upgrade the database schema, then exit")
    maintain = sub.add_parser("maintain", help="recalculate tiers and/or prune, then exit")
    maintain.add_argument("--recalculate", action="store_true", help="recalculate tiers")
    maintain.add_argument("--prune", action="store_true", help="delete EXPIRED memories")
    maintain.add_argument("--limit", type=int, help="prune at most this many")
    maintain.add_argument("--dry-run", action="store_true", help="list what prune would delete")
    maintain.add_argument("--project", help="only this project (default: all projects)")
    reindex = sub.add_parser(
        "reindex", help="re-embed every memory with the configured model (after changing it)"
    )
    reindex.add_argument("--batch-size", type=int, default=64, help="texts per model call")
    stats = sub.add_parser("stats", help="counts per tier and layer of a project")
    stats.add_argument("--project", help="the project (default MEMSTRATA_PROJECT)")
    stats.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


async def _preflight(settings: Settings) -> None:
    async with open_container(settings):
        pass


async def _migrate(settings: Settings) -> int:
    async with open_container(settings):
        pass
    _err(f"database up to date: {settings.db}")
    return EXIT_OK


async def _maintain(settings: Settings, args: argparse.Namespace) -> int:
    if not (args.recalculate or args.prune):
        _err("nothing to do: give --recalculate and/or --prune")
        return EXIT_USAGE
    result: dict[str, object] = {}
    async with open_container(settings) as c:
        if args.recalculate:
            result["tiers_changed"] = await maintenance.recalculate_tiers(
                c.repo, c.clock, settings.tiers, args.project
            )
        if args.prune:
            outcome = await maintenance.prune_expired(
                c.repo,
                c.clock,
                settings.tiers,
                project=args.project,
                limit=args.limit,
                dry_run=args.dry_run,
            )
            result["pruned" if not args.dry_run else "would_prune"] = len(outcome.ids)
    _out(json.dumps(result))
    return EXIT_OK


class _Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._tty = sys.stderr.isatty()
        self._last = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if self._tty:
            filled = percent // 5
            bar = "#" * filled + "." * (20 - filled)
            sys.stderr.write(f"\r{self._label} [{bar}] {done}/{total} {percent}%")
            if done >= total:
                sys.stderr.write("\n")
        elif percent // 10 != self._last // 10 or done >= total:
            _err(f"{self._label}: {done}/{total} ({percent}%)")
        self._last = percent


async def _reindex(settings: Settings, args: argparse.Namespace) -> int:
    if settings.embedding.kind == "none":
        _err("MEMSTRATA_EMBEDDING_MODEL is 'none': there is no model to index with")
        return EXIT_USAGE
    async with open_container(settings, check_model=False) as c:
        assert c.embedder is not None
        assert c.indexer is not None
        embedder = await c.embedder.wait()
        await c.indexer.vectors.reset_model(embedder.model_id, embedder.dims)
        count = await c.indexer.backfill(
            embedder, batch_size=args.batch_size, progress=_Progress("reindex")
        )
    _out(json.dumps({"model": settings.embedding.model_id, "embedded": count}))
    return EXIT_OK


async def _stats(settings: Settings, args: argparse.Namespace) -> int:
    async with open_container(settings) as c:
        report = await maintenance.memory_stats(
            c.repo, c.clock, settings.tiers, args.project or settings.project
        )
    if args.json:
        _out(report.model_dump_json(indent=2))
        return EXIT_OK
    s = report.stats
    _out(
        f"project {s.project}: {s.total} memories, {s.content_bytes} bytes of text, "
        f"database {s.database_bytes} bytes"
    )
    _out("  tiers:  " + "  ".join(f"{t.value} {n}" for t, n in s.by_tier.items()))
    _out("  layers: " + "  ".join(f"{k.value} {n}" for k, n in s.by_layer.items()))
    for note in report.health:
        _out(f"  note: {note.message}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `memstrata` console script and of `python -m server`."""
    args = _parser().parse_args(argv)
    try:
        settings = Settings()
    except (ValidationError, SettingsError) as exc:
        _err(f"invalid MEMSTRATA_* configuration:\n{exc}")
        sys.exit(EXIT_USAGE)
    command = args.command or "serve"
    # First, for every command: nothing may log to stdout before the stdio transport starts.
    # (serve configures it again after MCPServer() installs its own handlers.)
    configure_logging(settings.log_level, settings.log_format)
    try:
        if command == "serve":
            from server.app import serve_http, serve_stdio

            # Preflight: open, migrate and check the store (embedding model) before MCP starts,
            # so a problem prints one clear line instead of a traceback from inside the SDK.
            asyncio.run(_preflight(settings))
            if getattr(args, "http", False):
                host = args.host or settings.http_host
                port = args.port or settings.http_port
                _err(f"memstrata: serving MCP at http://{host}:{port}/mcp (database {settings.db})")
                asyncio.run(serve_http(settings, host, port))
            else:
                serve_stdio(settings)
            code = EXIT_OK
        elif command == "migrate":
            code = asyncio.run(_migrate(settings))
        elif command == "maintain":
            code = asyncio.run(_maintain(settings, args))
        elif command == "reindex":
            code = asyncio.run(_reindex(settings, args))
        else:
            code = asyncio.run(_stats(settings, args))
    except MemoryCoreError as exc:
        _err(f"memstrata: {exc}")
        code = EXIT_ERROR
    except KeyboardInterrupt:
        code = EXIT_OK
    sys.exit(code)
