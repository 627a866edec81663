"""CLI commands that move whole stores: export, import (JSON lines) and backup.

export and import work on the configured backend (the SQLite file, or PostgreSQL when
MEMSTRATA_DATABASE_URL is set); backup copies the SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

from memory_core.clock import SystemClock
from memory_core.files import is_database_file, partial_beside
from memory_core.ports.transfer import MemoryTransfer
from memory_core.services import transfer
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer
from server.cli.leftovers import remove_stale
from server.cli.output import Exit, err, out_json, progress_bar
from server.settings import Settings

__all__ = ["run_backup", "run_export", "run_import"]


@asynccontextmanager
async def open_transfer(settings: Settings, *, migrate: bool) -> AsyncIterator[MemoryTransfer]:
    """The store's transfer adapter on its own connection (migrated first unless told not to).

    PostgreSQL is always migrated on open (under its advisory lock), as a server does.
    """
    if settings.database_url:
        from memory_core.storage import postgres
        from memory_core.storage.postgres.transfer import PostgresMemoryTransfer

        store = await postgres.open_store(settings.database_url, pool_max=2)
        try:
            yield PostgresMemoryTransfer(postgres.PostgresSession(store.pool))
        finally:
            await store.close()
        return
    db = await open_database(settings.db)
    try:
        if migrate:
            await apply_migrations(db)
        yield SqliteMemoryTransfer(SqliteSession(db), settings.db)
    finally:
        await db.close()


def run_export(settings: Settings, args: argparse.Namespace) -> int:
    """Write every store (or one project's memories and conversations) as JSON lines."""
    target = None if args.path == "-" else Path(args.path)
    if target is not None and target.exists() and not args.force:
        err(f"memstrata: {target} exists; pass --force to overwrite it")
        return Exit.EXISTS
    if target is not None and is_database_file(target, settings.db):
        err(f"memstrata: {target} is one of the database's own files; choose another file")
        return Exit.USAGE
    counts: dict[str, int] = {}
    if target is None:
        asyncio.run(_export(settings, args, sys.stdout, counts))
    else:
        # Written beside the target and renamed at the end (memory_core.files): a failed
        # export never costs the file it was to replace, nor writes through a planted link.
        # A killed export's partial goes first (server.cli.leftovers).
        remove_stale(target)
        with partial_beside(target) as (fd, partial):
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:
                asyncio.run(_export(settings, args, stream, counts))
            os.replace(partial, target)
    memories = counts.get("memory", 0)
    if args.json and target is not None:
        out_json(
            {"path": str(target), "exported": memories, "stores": counts, "project": args.project}
        )
    else:
        others = sum(counts.values()) - memories
        err(
            f"memstrata: exported {memories} memories and {others} other records "
            f"({_listed(counts)}) to {target or 'stdout'}"
        )
    return Exit.OK


def _listed(counts: dict[str, int]) -> str:
    shown = [f"{n} {kind}" for kind, n in counts.items() if n and kind != "memory"]
    return ", ".join(shown) or "no other stores"


async def _export(
    settings: Settings, args: argparse.Namespace, stream: TextIO, counts: dict[str, int]
) -> None:
    async with open_transfer(settings, migrate=True) as store:
        with progress_bar("export") as bar:
            async for line in transfer.export_lines(
                store, SystemClock(), args.project, progress=bar, counts=counts
            ):
                stream.write(line + "\n")


def run_import(settings: Settings, args: argparse.Namespace) -> int:
    """Validate a whole export, then import it in batches of `--batch` rows."""
    if args.batch < 1:
        err("memstrata: --batch must be at least 1")
        return Exit.USAGE
    if args.path == "-":
        lines = sys.stdin.read().splitlines()
    else:
        source = Path(args.path)
        if not source.is_file():
            err(f"memstrata: no export file at {source}")
            return Exit.NOT_FOUND
        lines = source.read_text(encoding="utf-8").splitlines()
    return asyncio.run(_import(settings, args, lines))


async def _import(settings: Settings, args: argparse.Namespace, lines: list[str]) -> int:
    async with open_transfer(settings, migrate=True) as store:
        parsed = transfer.parse_export(
            lines,
            schema_version=await store.schema_version(),
            limits=settings.limits,
            conversation=settings.conversation,
            knowledge=settings.knowledge,
        )
        with progress_bar("import") as bar:
            counts = await transfer.import_records(
                store,
                parsed,
                project=args.project,
                batch=args.batch,
                progress=bar,
                redaction=settings.redaction,
            )
    if args.json:
        out_json(counts)
    else:
        err(
            f"memstrata: imported {counts.imported} memories ({counts.renumbered} under new ids), "
            f"skipped {counts.skipped} already stored"
        )
        for kind, n in counts.stores.items():
            if kind != "memory":
                err(
                    f"memstrata: {kind}: imported {n['imported']} ({n['renumbered']} under new "
                    f"ids), skipped {n['skipped']}"
                )
        if counts.redacted:
            kinds = ", ".join(f"{kind} x{n}" for kind, n in counts.redacted.items())
            err(f"memstrata: credentials redacted before storing: {kinds}")
        if counts.imported:
            err(
                "memstrata: imported memories are found by keyword search now, and by meaning "
                "once embedded: `memstrata serve` embeds them in the background at start-up, "
                "or run `memstrata reindex`"
            )
    return Exit.OK


def run_backup(settings: Settings, args: argparse.Namespace) -> int:
    """Copy the live database with SQLite's online backup API and verify the copy."""
    target = Path(args.path)
    if not settings.db.is_file():
        err(f"memstrata: no database at {settings.db} (set MEMSTRATA_DB)")
        return Exit.NOT_FOUND
    if is_database_file(target, settings.db):
        err("memstrata: the backup path is one of the database's own files; choose another")
        return Exit.USAGE
    if target.exists() and not args.force:
        err(f"memstrata: {target} exists; pass --force to replace it")
        return Exit.EXISTS
    target.parent.mkdir(parents=True, exist_ok=True)
    # A killed backup's copy and its -wal/-shm (left by the integrity check) go first.
    remove_stale(target)
    return asyncio.run(_backup(settings, args, target))


async def _backup(settings: Settings, args: argparse.Namespace, target: Path) -> int:
    # No migration: a backup taken before an upgrade must be the store as it was.
    async with open_transfer(settings, migrate=False) as store:
        report = await store.backup(target)
    if args.json:
        out_json(report)
    elif report.integrity == "ok":
        err(f"memstrata: backed up {settings.db} to {target} ({report.bytes} bytes, verified)")
    if report.integrity != "ok":
        err(f"memstrata: the copy failed its integrity check ({report.integrity}); not kept")
        return Exit.PROBLEMS
    return Exit.OK
