"""`memstrata copy-store`: move every store between SQLite and PostgreSQL, then verify."""

from __future__ import annotations

import argparse
import asyncio
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_core.errors import InvalidInputError, MemoryCoreError
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.vectors import EXACT_SEARCH_MAX
from server.backends import redacted_url
from server.settings import Settings

if TYPE_CHECKING:
    # The copy service and endpoints load where copy-store runs: the CLI imports this module
    # for every command it parses (`memstrata stats` among them).
    from memory_core.ports.transfer import CopyEndpoint, MemoryTransfer
    from memory_core.services.copy_store import CopyReport

__all__ = ["add_parser", "copy_between", "open_endpoint", "run", "run_command"]

_EXAMPLES = """\
examples:
  memstrata copy-store --from sqlite:///home/me/.local/share/memstrata/memory.db \\
                       --to postgresql://memstrata:secret@db:5432/memstrata
  memstrata copy-store --from postgresql://memstrata@db/memstrata --to sqlite:///tmp/copy.db

exit codes:
  0    copied and verified (the target's counts equal the source's)
  1    failure (unreachable database, target not empty, another embedding model)
  4    copied, but the counts differ (see the report)"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `copy-store` on the `memstrata` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "copy-store",
        help="copy every store between SQLite and PostgreSQL, then verify counts",
        description=textwrap.fill(
            "Copy every store from one database into an empty one: the memories (ids, tiers, "
            "access counts, embeddings and the embedding model record), conversations with "
            "their summaries, exchanges and tool cache, the scratchpad, preferences, playbooks "
            "and business documents with their chunks and embeddings; in batches with a "
            "progress bar, then compare counts store by store. The source's rows are never "
            "changed (its schema is brought up to date first, as every command does; an older "
            "memstrata then refuses it). A copy that fails midway leaves the target partly "
            "filled: empty it before retrying (see docs/postgres.md).",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="URL",
        help="sqlite:///path or postgresql://...",
    )
    parser.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="URL",
        help="sqlite:///path or postgresql://...",
    )
    parser.add_argument("--batch", type=int, default=500, help="rows per transaction (500)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _sqlite_path(url: str) -> Path | None:
    """The file of a sqlite:// URL (everything after `sqlite://`), or of a bare path."""
    if url.startswith("sqlite://"):
        return Path(url[len("sqlite://") :])
    if "://" not in url:
        return Path(url)
    return None


@asynccontextmanager
async def open_endpoint(
    url: str, *, create: bool, exact_max: int = EXACT_SEARCH_MAX
) -> AsyncIterator[tuple[CopyEndpoint, MemoryTransfer]]:
    """A migrated store as a copy endpoint (memories and vectors) and its other stores' rows.

    SQLite files are created only when `create`.

    `exact_max` is MEMSTRATA_VECTOR_EXACT_MAX: a SQLite target lists the projects it receives
    past it as coarse-searched, as a server writing them would.

    Raises:
        InvalidInputError: The URL is neither sqlite:// nor postgresql://, or names no file.
    """
    # Imported here: the transfer module loads sqlite-vec (and numpy), and the CLI imports this
    # module for every command it parses.
    from memory_core.storage.sqlite.copy import SqliteCopyEndpoint
    from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer

    path = _sqlite_path(url)
    if path is not None:
        if not create and not path.is_file():
            raise InvalidInputError("from", f"no SQLite database at {path}")
        db = await open_database(path)
        try:
            await apply_migrations(db)
            session = SqliteSession(db)
            yield (
                SqliteCopyEndpoint(session, exact_max=exact_max),
                SqliteMemoryTransfer(session, path),
            )
        finally:
            await db.close()
        return
    if url.split("://", 1)[0] not in ("postgresql", "postgres"):
        raise InvalidInputError("url", "use sqlite:///path/to/file.db or postgresql://...")
    from memory_core.storage import postgres
    from memory_core.storage.postgres.copy import PostgresCopyEndpoint
    from memory_core.storage.postgres.transfer import PostgresMemoryTransfer

    store = await postgres.open_store(url, pool_max=2)
    try:
        pg = postgres.PostgresSession(store.pool)
        yield PostgresCopyEndpoint(pg), PostgresMemoryTransfer(pg)
    finally:
        await store.close()


async def copy_between(
    source_url: str, target_url: str, *, batch: int = 500, exact_max: int = EXACT_SEARCH_MAX
) -> CopyReport:
    """Open both stores and copy, with a progress bar on stderr."""
    from memory_core.services.copy_store import copy_store
    from server.cli.output import progress_bar  # rich loads for this command only

    async with (
        open_endpoint(source_url, create=False) as (source, source_rows),
        open_endpoint(target_url, create=True, exact_max=exact_max) as (target, target_rows),
    ):
        with progress_bar("copying every store") as bar:
            return await copy_store(
                source, target, progress=bar.update, batch=batch, stores=(source_rows, target_rows)
            )


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """The `memstrata` dispatcher's form of `run`.

    copy-store reads no MEMSTRATA_* store, only MEMSTRATA_VECTOR_EXACT_MAX.
    """
    return run(args, exact_max=settings.vector_exact_max)


def run(args: argparse.Namespace, *, exact_max: int = EXACT_SEARCH_MAX) -> int:
    """Run `copy-store`; returns the exit code."""
    from server.cli.output import Exit, err, out_json

    try:
        report = asyncio.run(
            copy_between(args.source, args.target, batch=args.batch, exact_max=exact_max)
        )
    except MemoryCoreError as exc:
        err(f"memstrata: {exc}")
        return int(Exit.ERROR)
    if args.json:
        out_json({**report.__dict__, "verified": report.verified})
    else:
        others = ", ".join(
            f"{here} {kind}" + ("" if here == there else f" (target holds {there})")
            for kind, (here, there) in report.stores.items()
            if here or there
        )
        err(
            f"copied {report.memories} memories and {report.embeddings} embeddings "
            f"({report.model or 'no embedding model'}) from {redacted_url(args.source)} to "
            f"{redacted_url(args.target)}: target holds {report.target_memories} memories, "
            f"{report.target_embeddings} embeddings; other stores: {others or 'none'}"
            + (" (verified)" if report.verified else " (COUNTS DIFFER)")
        )
    return int(Exit.OK) if report.verified else int(Exit.PROBLEMS)
