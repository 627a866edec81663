"""`memstrata compact-file`: VACUUM the SQLite file so deleted text leaves its free pages now."""

from __future__ import annotations

import argparse

from memory_core.errors import StorageError
from memory_core.storage.sqlite.vacuum import compact_file
from server.cli.output import Exit, err, out_json
from server.settings import Settings

__all__ = ["run_compact_file"]


async def run_compact_file(settings: Settings, args: argparse.Namespace) -> int:
    """Rewrite MEMSTRATA_DB from its live rows and say how many bytes that freed."""
    if not settings.db.is_file():
        err(f"memstrata: no database at {settings.db} (set MEMSTRATA_DB)")
        return Exit.NOT_FOUND
    try:
        report = await compact_file(settings.db)
    except StorageError as exc:
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        err(f"memstrata: compacting {settings.db} failed{cause}; the file is unchanged")
        return Exit.ERROR
    if args.json:
        out_json({**report.model_dump(), "bytes_freed": report.freed})
    else:
        err(
            f"memstrata: compacted {settings.db}: {report.bytes_before} -> {report.bytes_after} "
            f"bytes ({report.freed} freed, {report.free_pages_before} free pages before)"
        )
    return Exit.OK
