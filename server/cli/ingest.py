"""`memstrata ingest PATH`: text and markdown files become a tenant's business context."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from memory_core.services.ingest_files import ingest_path
from server.cli.output import Exit, err, out_json, progress_bar, stdout_console
from server.container import open_container
from server.settings import Settings

__all__ = ["run_ingest"]


async def run_ingest(settings: Settings, args: argparse.Namespace) -> int:
    """Ingest a file or a folder; unchanged files are no-ops, changed ones replace their chunks."""
    path = Path(args.path)
    if not await anyio.Path(path).exists():
        err(f"no such file or folder: {path}")
        return Exit.NOT_FOUND
    async with open_container(settings) as c:
        if c.embedder is not None:
            c.embedder.start()  # load in the background while the files are read
            await c.embedder.until_ready()
        with progress_bar("ingest") as bar:
            report = await ingest_path(c.knowledge.business, args.tenant, path, progress=bar.update)
    summary = {
        "tenant": args.tenant,
        "files": report.files,
        "created": report.created,
        "replaced": report.replaced,
        "unchanged": report.unchanged,
        "chunks": report.chunks,
        "skipped": [{"path": p, "reason": why} for p, why in report.skipped],
    }
    if args.json:
        out_json(summary)
    else:
        console = stdout_console()
        console.print(
            f"ingested {report.files} files for tenant {args.tenant!r}: {report.created} new, "
            f"{report.replaced} replaced, {report.unchanged} unchanged, {report.chunks} chunks",
            markup=False,
        )
        for p, why in report.skipped:
            console.print(f"skipped {p}: {why}", markup=False)
    return Exit.OK
