"""The `memstrata` command: serve, migrate, maintain and inspect from a terminal.

Every command runs over the same services as the MCP tools (server.container.open_container).
Results go to stdout (rich tables, or JSON with --json); messages, progress and errors go to
stderr. `serve` never imports rich output: in stdio mode stdout belongs to MCP.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import sys
import textwrap
from collections.abc import Sequence

from pydantic import ValidationError

from memory_core.errors import MemoryCoreError, SchemaMismatchError, StorageError
from server.logging import configure_logging
from server.settings import Settings, SettingsError, describe_settings_error
from server.toolsets import parse_toolsets

__all__ = ["EXIT_CANNOT_LISTEN", "EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "ONE_SHOT", "main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_CANNOT_LISTEN = 6

# Cold one-shot queries (issue 21): they answer and exit, so they run without the cyclic
# garbage collector, which the console script turns off for start-up (server.cli.main).
ONE_SHOT = frozenset({"stats", "recall", "search"})

# Commands that read or write the SQLite file itself, not the configured store.
_SQLITE_FILE_COMMANDS = frozenset({"doctor", "backup", "compact-file"})

_EXIT_CODES = """\
exit codes:
  0    success
  1    failure (storage, embedding model, invalid data); the reason is on stderr
  2    usage error: bad arguments or invalid MEMSTRATA_* configuration
  3    not found (recall: no fact under that key; import/backup: no such file)
  4    problems found (doctor: a check failed; backup: the copy failed verification)
  5    refused to overwrite an existing file (export/backup without --force)
  6    cannot listen (serve --http, ui: the port is in use, or the address may not be bound)
  130  interrupted (Ctrl-C)"""

_FORMATTER = argparse.RawDescriptionHelpFormatter


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    examples: str,
) -> argparse.ArgumentParser:
    return sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 88),
        epilog=f"examples:\n{examples}\n\n{_EXIT_CODES}",
        formatter_class=_FORMATTER,
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for scripts, not a table")


def _add_project(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--project", "-p", metavar="P", help=f"the project ({default})")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `memstrata` parser; with `command`, other modules' commands are left out."""
    parser = argparse.ArgumentParser(
        prog="memstrata",
        description=textwrap.fill(
            "Long-term memory for AI clients (an MCP server on one SQLite file). "
            "Configuration comes from MEMSTRATA_* environment variables (MEMSTRATA_DB is the "
            "database file). Run `memstrata COMMAND --help` for its options and examples.",
            88,
        ),
        epilog="examples:\n"
        "  memstrata serve                        # stdio, for Claude Desktop / Claude Code\n"
        "  memstrata stats                        # tiers and layers of every project\n"
        "  memstrata search 'deploy checklist'    # find memories from a terminal\n"
        "  memstrata doctor                       # check the installation and database\n\n"
        + _EXIT_CODES,
        formatter_class=_FORMATTER,
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log INFO (-vv: DEBUG) on stderr; commands other than `serve --http` and `ui` "
        "(stdio `serve` included) log only warnings unless MEMSTRATA_LOG_LEVEL is set",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = _command(
        sub,
        "serve",
        "run the MCP server (stdio unless --http)",
        "Run the MCP server: over stdio (the default, for clients that start it) or as "
        "streamable HTTP at http://HOST:PORT/mcp.",
        "  memstrata serve\n"
        "  memstrata serve --http --port 8765\n"
        "  MEMSTRATA_AUTH_TOKENS_FILE=/run/secrets/memstrata memstrata serve --http --host 0.0.0.0",
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp")
    serve.add_argument("--host", help="HTTP interface (default MEMSTRATA_HTTP_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default MEMSTRATA_HTTP_PORT, 8765)")
    serve.add_argument(
        "--toolsets",
        metavar="LIST",
        help="comma-separated toolsets to list (default MEMSTRATA_TOOLSETS, core,maintenance; "
        "`memstrata tools` shows them)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow HTTP beyond loopback without MEMSTRATA_AUTH_TOKENS (trusted networks only)",
    )
    _command(
        sub,
        "migrate",
        "create or upgrade the database schema, then exit",
        "Apply every pending migration (forward-only) to MEMSTRATA_DB, creating it if needed.",
        "  memstrata migrate\n  MEMSTRATA_DB=/srv/memory.db memstrata migrate",
    )
    maintain = _command(
        sub,
        "maintain",
        "recalculate tiers, prune EXPIRED memories, enforce the storage cap",
        "Recalculate every memory's tier from its last use, delete EXPIRED memories "
        "(unused for 30 days by default), and/or bring projects over the storage cap "
        "(MEMSTRATA_PRESSURE__MAX_MEMORIES) back under it. Covers every project unless "
        "--project is given. Run it from cron for stores used only through stdio clients.",
        "  memstrata maintain --recalculate --prune\n"
        "  memstrata maintain --prune --dry-run --project work\n"
        "  memstrata maintain --prune --limit 500 --json\n"
        "  memstrata maintain --cap --dry-run",
    )
    maintain.add_argument("--recalculate", action="store_true", help="recalculate tiers")
    maintain.add_argument("--prune", action="store_true", help="delete EXPIRED memories")
    maintain.add_argument("--limit", type=int, help="prune at most this many")
    maintain.add_argument(
        "--cap",
        action="store_true",
        help="delete the least used memories of projects over the storage cap "
        "(MEMSTRATA_PRESSURE__MAX_MEMORIES)",
    )
    maintain.add_argument(
        "--dry-run", action="store_true", help="list what prune (or --cap) would delete"
    )
    _add_project(maintain, "default: all projects")
    _add_json(maintain)
    reindex = _command(
        sub,
        "reindex",
        "re-embed every memory with the configured model (after changing it)",
        "Drop every stored vector, record the configured MEMSTRATA_EMBEDDING_MODEL and embed "
        "every memory again, with a progress bar. Needed after changing the model: the "
        "server refuses a database indexed by another one.",
        "  memstrata reindex\n  MEMSTRATA_EMBEDDING_MODEL=st:all-mpnet-base-v2 "
        "MEMSTRATA_EMBEDDING_DIMS=768 memstrata reindex",
    )
    reindex.add_argument("--batch-size", type=int, default=64, help="texts per model call")
    _add_json(reindex)
    stats = _command(
        sub,
        "stats",
        "a table of tiers and layers per project",
        "Count memories per tier (ACTIVE, RECENT, ARCHIVED, EXPIRED, as of now) and per "
        "layer, for one project or for every project in the database, with health notes.",
        "  memstrata stats\n  memstrata stats --project work\n  memstrata stats --json | jq",
    )
    _add_project(stats, "default: every project")
    _add_json(stats)
    search = _command(
        sub,
        "search",
        "search memories by meaning and words (as the `search` tool)",
        "Hybrid search exactly as the `search` tool runs it; the hits are marked as used. "
        "Semantic modes load the embedding model first (about a second).",
        "  memstrata search 'how do we deploy'\n"
        "  memstrata search billing --mode keyword --layer episodic --limit 5\n"
        "  memstrata search 'release notes' --project work --json",
    )
    search.add_argument("query", help="what to look for, in plain words")
    search.add_argument(
        "--mode", choices=("hybrid", "keyword", "semantic"), default="hybrid", help="(hybrid)"
    )
    search.add_argument(
        "--layer", choices=("working", "episodic", "semantic", "procedural"), help="only this"
    )
    search.add_argument("--limit", "-n", type=int, default=10, help="most hits (10)")
    search.add_argument("--session", help="only this session id")
    _add_project(search, "default: in a git checkout its project, else MEMSTRATA_PROJECT")
    _add_json(search)
    recall = _command(
        sub,
        "recall",
        "read a fact by key (as the `recall` tool)",
        "Read the semantic fact stored under KEY and the procedural rules whose condition "
        "matches it. Exit code 3 when no fact is stored under KEY.",
        "  memstrata recall user.preferred_language\n"
        "  memstrata recall 'deploying to production' --json",
    )
    recall.add_argument("key", help="the key given to `learn`, or a situation")
    _add_project(recall, "default: in a git checkout its project, else MEMSTRATA_PROJECT")
    _add_json(recall)
    export = _command(
        sub,
        "export",
        "write every store as JSON lines (a file, or - for stdout)",
        "Write every store (memories, conversations with their summaries, exchanges and tool "
        "cache, scratchpad, preferences, playbooks, business documents with their chunks and "
        "embeddings) as JSON lines: a header "
        '({"format": "memstrata-export", "format_version": 2, "schema_version": N, ...}), '
        'then one line per row, its "kind" first, with every field. With --project only that '
        "project's memories and conversations. Memory embeddings are not exported (imported "
        "memories are embedded again). Works on SQLite and PostgreSQL alike.",
        "  memstrata export memories.jsonl\n"
        "  memstrata export - --project work | gzip > work.jsonl.gz",
    )
    export.add_argument("path", help="the file to write, or - for stdout")
    export.add_argument("--force", action="store_true", help="overwrite an existing file")
    _add_project(export, "default: every project")
    _add_json(export)
    imp = _command(
        sub,
        "import",
        "load a JSON-lines export into the database",
        "Validate the whole file with the tools' limits (a bad file writes nothing; every bad "
        "line is named), then import it in transactions of --batch rows, so a live server "
        "writes in between. Into an empty database the rows come back exactly as exported, "
        "ids included. A row already stored (a memory with the same key, or text, in its "
        "project and layer; a session with the same id; a preference with the same key; a "
        "document with the same source; ...) is skipped and counted, never overwritten; a "
        "new row whose id is taken gets a new id. An import that fails midway keeps the "
        "batches it committed: run it again to finish (stored rows are skipped). Imported "
        "memories are embedded by the server's background backfill at start-up, or by "
        "`memstrata reindex`. Version 1 exports (memories only) import too.",
        "  memstrata import memories.jsonl\n"
        "  gunzip -c work.jsonl.gz | memstrata import - --project work --json",
    )
    imp.add_argument("path", help="the export file, or - for stdin")
    imp.add_argument(
        "--batch",
        type=int,
        default=1000,
        help="rows per transaction (1000); smaller batches let a busy server in sooner",
    )
    _add_project(imp, "default: every project in the file")
    _add_json(imp)
    backup = _command(
        sub,
        "backup",
        "copy the database safely while it is in use, and verify the copy",
        "Copy MEMSTRATA_DB with SQLite's online backup API (safe while a server is writing), "
        "check the copy with PRAGMA integrity_check, and only then move it to PATH. The "
        "database is not migrated first, so a backup taken before an upgrade is the store "
        "as it was.",
        "  memstrata backup ~/backups/memory-$(date +%F).db\n"
        "  memstrata backup /srv/backup/memory.db --force --json",
    )
    backup.add_argument("path", help="the backup file to create")
    backup.add_argument("--force", action="store_true", help="replace an existing file")
    _add_json(backup)
    compact = _command(
        sub,
        "compact-file",
        "rewrite the database file so deleted text is gone from it now",
        "VACUUM MEMSTRATA_DB: the file is rebuilt from its live rows, its free pages (which "
        "may hold text deleted before secure_delete was on) are dropped, and the WAL is "
        "checkpointed and truncated. Prints the bytes freed. Needs free disk space for a "
        "second copy of the file, and waits for (or, past the busy timeout, fails on) a "
        "server's write; servers may keep running.",
        "  memstrata compact-file\n  MEMSTRATA_DB=/srv/memory.db memstrata compact-file --json",
    )
    _add_json(compact)
    doctor = _command(
        sub,
        "doctor",
        "check the installation and the database, with a fix for each problem",
        "Check the SQLite driver (extension loading, sqlite-vec, FTS5), the embedding model "
        "package, its file's sha256 and the tokenizer, the database path and permissions, "
        "its integrity, its schema version against the migrations shipped, and the model it "
        "was indexed with against the configured one. Prints how to fix each failure; "
        "exit code 4 when any check fails. Never changes the database.",
        "  memstrata doctor\n  MEMSTRATA_DB=/srv/memory.db memstrata doctor --json",
    )
    _add_json(doctor)
    ingest = _command(
        sub,
        "ingest",
        "load text and markdown files into a tenant's business context",
        "Chunk each file along paragraph boundaries, embed the chunks and store them as "
        "documents of TENANT (searched by the `search_business_context` tool). A folder is "
        "read recursively (.md, .markdown, .txt, .rst; hidden files skipped); each file's "
        "source is its path relative to the folder, so ingesting the folder again only "
        "replaces the files that changed. Files that are not UTF-8 text are skipped and listed.",
        "  memstrata ingest docs/ --tenant acme\n"
        "  memstrata ingest handbook.md --tenant acme --json",
    )
    ingest.add_argument("path", help="a text/markdown file or a folder of them")
    ingest.add_argument("--tenant", "-t", required=True, help="whose business context")
    _add_json(ingest)
    for module, commands in _PARSER_MODULES:
        if command is None or command in commands:
            importlib.import_module(module).add_parser(sub)
    return parser


# Modules that add their own commands to the parser, in `memstrata --help` order. Each is
# imported only to parse its own command (or for the full listing): `server.cli.copy` reaches
# the storage records and vectors, `setup` the Claude settings files (~4% of a cold `stats`).
_PARSER_MODULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("server.cli.knowledge", frozenset({"preferences", "documents", "scratchpad"})),
    ("server.cli.copy", frozenset({"copy-store"})),
    ("server.cli.setup", frozenset({"setup"})),
    ("server.cli.tools", frozenset({"tools"})),
    ("server.cli.ui", frozenset({"ui"})),
    ("server.cli.pins", frozenset({"pin", "unpin"})),
    ("server.cli.projects", frozenset({"projects"})),
    ("server.cli.session", frozenset({"session"})),
    ("server.hooks.entry", frozenset({"hook"})),
)
# The commands defined above in `_parser` itself.
_OWN_COMMANDS = frozenset(
    {"serve", "migrate", "maintain", "reindex", "stats", "search", "recall", "export"}
    | {"import", "backup", "compact-file", "doctor", "ingest"}
)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command `argv` names, or None when the whole parser is needed.

    None (every command's parser) for the listing (`--help` with no command) and for a word
    that names no command, so argparse's errors list every choice as before. A bare
    `memstrata` serves, and needs no other command's parser.
    """
    if not argv:
        return "serve"
    word = next((a for a in argv if not a.startswith("-")), None)
    if word is None:
        return None
    known = _OWN_COMMANDS.union(*(commands for _, commands in _PARSER_MODULES))
    return word if word in known else None


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _log_level(command: str, settings: Settings, args: argparse.Namespace) -> str:
    """INFO for the HTTP server's and the UI's log; anything else only warns unless asked.

    Asked: -v, or MEMSTRATA_LOG_LEVEL. `serve` over stdio is started by a client that shows
    every line of its stderr as an error (Claude Code logs each one as [ERROR]), so by default
    it writes there only what is one: warnings and errors.
    """
    if args.verbose:
        return "DEBUG" if args.verbose > 1 else "INFO"
    if "log_level" in settings.model_fields_set:
        return settings.log_level
    if command == "ui" or (command == "serve" and getattr(args, "http", False)):
        return settings.log_level
    return "WARNING"


def _failure(exc: MemoryCoreError, settings: Settings) -> str:
    """A domain error for a person at a terminal: with the store's location and the cause.

    Models are told only the operation (server.protocol.errors); here paths and driver text help.
    """
    if not isinstance(exc, StorageError) or isinstance(exc, SchemaMismatchError):
        return str(exc)
    cause = exc.__cause__
    while isinstance(cause, StorageError) and cause.__cause__ is not None:
        cause = cause.__cause__
    where = settings.store_location
    if isinstance(cause, OSError) and cause.strerror:
        named = cause.filename and str(cause.filename) != where
        why = f"{cause.filename} {cause.strerror}" if named else cause.strerror
    else:
        why = str(cause or "") or type(cause).__name__
    hint = ""
    if "unable to open database file" in why:
        hint = " (does its folder exist, and may this user create files there?)"
    return f"{exc} {where}: {why}{hint}"


async def _preflight(settings: Settings) -> None:
    # Here, not at the top: the composition root loads every service, which `stats` and the
    # other light commands never build.
    from server.container import open_container

    async with open_container(settings):
        pass


async def _migrate(settings: Settings) -> int:
    from server.container import open_container

    async with open_container(settings):
        pass
    _err(f"database up to date: {settings.store_location}")
    return EXIT_OK


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from server.cli.lean_serve import active

    if getattr(args, "toolsets", None):
        try:
            parse_toolsets(args.toolsets)
        except ValueError as exc:
            _err(f"memstrata serve: --toolsets: {exc}")
            return EXIT_USAGE
        settings = settings.model_copy(update={"toolsets": args.toolsets})

    early = active()  # the early stdio wire the console script started, if any
    if early is not None and early.client_left():
        return EXIT_OK  # answered and gone before the SDK was even imported
    from server.app import serve_stdio

    host = args.host or settings.http_host
    port = args.port or settings.http_port
    if getattr(args, "http", False):
        from server.http.app import http_authority

        # Refused before the store is opened: a refusal must not create or migrate a database.
        http_authority(settings, host, insecure=args.insecure)
    # Preflight: open, migrate and check the store (embedding model) before MCP starts,
    # so a problem prints one clear line instead of a traceback from inside the SDK.
    asyncio.run(_preflight(settings))
    if getattr(args, "http", False):
        from server.http.app import HttpBindError, serve_http

        where = settings.store_location

        def announce(url: str) -> None:  # called once the port is bound
            _err(f"memstrata: serving MCP at {url} (database {where})")
            if settings.http_dashboard:
                _err(f"memstrata: dashboard at {url.removesuffix('mcp')}")

        try:
            asyncio.run(serve_http(settings, host, port, insecure=args.insecure, announce=announce))
        except HttpBindError as exc:
            _err(f"memstrata: {exc}")
            return EXIT_CANNOT_LISTEN
    else:
        serve_stdio(settings, early)
    return EXIT_OK


# command -> (module under server/cli/, function(settings, args)); async ones run under asyncio.
_RUNNERS = {
    "doctor": ("doctor", "run_doctor"),
    "export": ("transfer", "run_export"),
    "import": ("transfer", "run_import"),
    "backup": ("transfer", "run_backup"),
    "compact-file": ("compact_file", "run_compact_file"),
    "copy-store": ("copy", "run_command"),
    "setup": ("setup", "run_command"),
    "tools": ("tools", "run_command"),
    "ui": ("ui", "run_ui"),
    "projects": ("projects", "run_command"),
    "pin": ("pins", "run_command"),
    "unpin": ("pins", "run_command"),
    "maintain": ("memory", "run_maintain"),
    "reindex": ("memory", "run_reindex"),
    "stats": ("memory", "run_stats"),
    "search": ("memory", "run_search"),
    "recall": ("memory", "run_recall"),
    "ingest": ("ingest", "run_ingest"),
    "session": ("session", "run_command"),
    # knowledge.COMMANDS, named here so listing them does not import the module.
    "preferences": ("knowledge", "run_command"),
    "documents": ("knowledge", "run_command"),
    "scratchpad": ("knowledge", "run_command"),
}
_ASYNC_COMMANDS = frozenset(
    {"maintain", "reindex", "stats", "search", "recall", "ingest", "compact-file"}
    | {"pin", "unpin", "session"}
)


def _run(command: str, settings: Settings, args: argparse.Namespace) -> int:
    """Run one non-serve command; its modules (and rich) load only here, never for `serve`.

    Only the command's own module is imported: the others pull in what this command never
    needs (ingest and copy-store load numpy; a cold `memstrata stats` is ~100 ms faster).
    """
    if settings.database_url and command in _SQLITE_FILE_COMMANDS:
        _err(
            f"memstrata {command} works on the SQLite file (MEMSTRATA_DB); the store is on "
            "PostgreSQL (MEMSTRATA_DATABASE_URL). Use `memstrata copy-store` to move stores "
            "between backends, and pg_dump for PostgreSQL backups."
        )
        return EXIT_USAGE

    if command == "migrate":
        return int(asyncio.run(_migrate(settings)))
    module, function = _RUNNERS[command]
    run = getattr(importlib.import_module(f"server.cli.{module}"), function)
    if command in _ASYNC_COMMANDS:
        return int(asyncio.run(run(settings, args)))
    return int(run(settings, args))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `memstrata` console script and of `python -m server`."""
    words = list(sys.argv[1:] if argv is None else argv)
    args = _parser(_command_word(words)).parse_args(words)
    if args.command == "hook":  # `python -m server hook ...`; the console script goes direct
        from server.hooks.entry import run

        run([args.event])
    try:
        settings = Settings()
    except (ValidationError, SettingsError) as exc:
        _err(f"invalid MEMSTRATA_* configuration:\n{describe_settings_error(exc)}")
        sys.exit(EXIT_USAGE)
    command = args.command or "serve"
    settings = settings.model_copy(update={"log_level": _log_level(command, settings, args)})
    # First, for every command: nothing may log to stdout before the stdio transport starts.
    # (serve configures it again after MCPServer() installs its own handlers.)
    configure_logging(settings.log_level, settings.log_format)
    if command not in ONE_SHOT and command != "serve":
        gc.enable()  # off during start-up (server.cli.main); `serve` turns it on when warm
    try:
        code = _serve(settings, args) if command == "serve" else _run(command, settings, args)
    except MemoryCoreError as exc:
        _err(f"memstrata: {_failure(exc, settings)}")
        code = EXIT_ERROR
    except KeyboardInterrupt:
        # Ctrl-C is how a person stops `serve`; for any other command it cut the work short.
        code = EXIT_OK if command == "serve" else 130
    sys.exit(code)
