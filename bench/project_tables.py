"""What one keyword table per project costs writes and opens (a benchmark; issue 19).

    python -m bench.project_tables --workdir W --projects 1 10 100 1000 \\
        --exe base=/work/main/.venv/bin --exe new=.venv/bin --rounds 3

A write queues each change (one trigger, whatever the number of projects) and moves the queue
into the project's table before it commits; each project adds a table and its shadow tables to
the schema, which SQLite parses at a connection's first statement. For each project count, a
store is made with that many projects (one row each), then in a fresh process per label
(taking turns, the labels interleaved): the time to open the store and run its first
statement, 300 single `add` calls and 20 `add_many` batches of 100 rows into one project (no
embedder: the storage write alone), and 100 deletes of one row. Medians of every sample of a
label.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _draft(text: str, project: str) -> Any:
    from memory_core.domain.inputs import content_hash
    from memory_core.domain.models import Layer, MemoryDraft

    return MemoryDraft(
        project=project,
        layer=Layer.EPISODIC,
        content=text,
        content_hash=content_hash(text),
        token_count=len(text.split()),
    )


def _text(i: int) -> str:
    words = ("deploy", "billing", "service", "outage", "tea", "coffee", "review", "notes")
    return " ".join(words[(i * k) % len(words)] for k in (1, 3, 5, 7)) + f" note {i}"


async def _build(db_path: Path, projects: int) -> None:
    from memory_core.storage.sqlite import (
        SqliteMemoryRepository,
        SqliteSession,
        apply_migrations,
        open_database,
    )

    db = await open_database(db_path)
    try:
        await apply_migrations(db)
        repo = SqliteMemoryRepository(SqliteSession(db))
        await repo.add_many([_draft(_text(i), f"project-{i}") for i in range(projects)], T0)
        await repo.add_many([_draft(_text(i), "main") for i in range(projects, 2000)], T0)
    finally:
        await db.close()


async def _worker(db_path: Path) -> dict[str, list[float]]:
    from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, open_database

    out: dict[str, list[float]] = {"open": [], "add": [], "add_many_row": [], "delete": []}
    tick = time.perf_counter()
    db = await open_database(db_path)
    await db.execute_fetchall("SELECT count(*) FROM context_snapshots WHERE project = 'x'")
    out["open"].append((time.perf_counter() - tick) * 1000)
    try:
        repo = SqliteMemoryRepository(SqliteSession(db))
        base = 10_000_000 + int(time.time() * 1000) % 1_000_000 * 1000
        for i in range(300):
            tick = time.perf_counter()
            await repo.add(_draft(_text(base + i), "main"), T0)
            out["add"].append((time.perf_counter() - tick) * 1000)
        for b in range(20):
            batch = [_draft(_text(base + 1000 + b * 100 + i), "main") for i in range(100)]
            tick = time.perf_counter()
            await repo.add_many(batch, T0)
            out["add_many_row"].append((time.perf_counter() - tick) * 1000 / 100)
        rows = await db.execute_fetchall(
            "SELECT id FROM context_snapshots WHERE project = 'main' ORDER BY id DESC LIMIT 100"
        )
        for (memory_id,) in rows:
            tick = time.perf_counter()
            await repo.delete("main", [int(memory_id)])
            out["delete"].append((time.perf_counter() - tick) * 1000)
    finally:
        await db.close()
    return out


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--projects", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--exe", action="append", help="LABEL=venv bin dir")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build:
        asyncio.run(_build(args.build, args.projects[0]))
        return
    if args.worker_db:
        print(json.dumps(asyncio.run(_worker(args.worker_db))))
        return
    bins = {k: Path(v).resolve() for k, v in (e.split("=", 1) for e in args.exe or [])}
    args.workdir.mkdir(parents=True, exist_ok=True)
    me = Path(__file__).read_text()

    def run(label: str, *extra: str) -> str:
        # This file's text as `-c`, from the label's checkout: its code is imported.
        bin_dir = bins[label]
        done = subprocess.run(
            [str(bin_dir / "python"), "-c", me, "--workdir", str(args.workdir), *extra],
            capture_output=True,
            text=True,
            check=True,
            cwd=bin_dir.parents[1],
        )
        return done.stdout

    results: dict[str, Any] = {}
    for projects in args.projects:
        samples: dict[str, dict[str, list[float]]] = {label: {} for label in bins}
        for n in range(args.rounds):
            for label in bins:
                db = (args.workdir / f"{label}-{projects}-{n}.db").resolve()
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
                run(label, "--build", str(db), "--projects", str(projects))
                got = json.loads(run(label, "--worker-db", str(db)).strip().splitlines()[-1])
                for name, values in got.items():
                    samples[label].setdefault(name, []).extend(values)
                print(f"{projects} projects round {n + 1} {label} done", file=sys.stderr)
        results[str(projects)] = {
            label: {name: round(statistics.median(v), 3) for name, v in figures.items()}
            for label, figures in samples.items()
        }
    report = {
        "command": " ".join(["python -m bench.project_tables", *sys.argv[1:]]),
        "load_average_at_end": os.getloadavg(),
        "median_ms": results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
