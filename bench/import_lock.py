"""How long a large import holds SQLite's write lock, and what a live writer waits meanwhile.

    python -m bench.import_lock --memories 100000 --entries 20000 --batches 250,1000,5000,0 \\
        --gaps 0,0.1

Writes one export file (format 2) of `memories` memories and one conversation session of
`entries` entries, then for each batch size (0: the whole file in one transaction, as
before batching) and each pause between batches imports it into a fresh SQLite file in a
child process (`memory_core.services.transfer.import_records`, as `memstrata import --batch
N` does) while this process appends a memory every 20 ms through the MemoryService, as a
live server would.
Prints, per run: the import's wall time, the longest and median write-lock hold (from BEGIN
IMMEDIATE succeeding to COMMIT; `max_call_ms` is a whole batch call, with the wait for the
lock and the pause), and the live writer's append latency (median, p99, max) and failures.

Reading it: the longest lock hold bounds how long a live writer can wait; the live append's
p99 and longest show whether it did; `failures` must stay 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio

from memory_core.domain.models import Layer
from memory_core.errors import MemoryCoreError
from memory_core.ports.transfer import Row
from memory_core.services import transfer
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.transfer import WRITER_GAP_S, SqliteMemoryTransfer
from server.container import open_container
from server.logging import configure_logging
from server.settings import ScheduleSettings, Settings

T = "2026-01-01T00:00:00Z"
WORDS = ["alpha", "beta", "gamma", "deploy", "billing", "search", "cache", "latency", "team"]


def write_export(path: Path, memories: int, entries: int) -> None:
    header = {
        "format": "memstrata-export",
        "format_version": 2,
        "schema_version": 7,
        "exported_at": T,
        "project": None,
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for i in range(1, memories + 1):
            text = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 16)) + f" {i}"
            record = {
                "kind": "memory",
                "id": i,
                "project": f"p{i % 4}",
                "layer": "episodic",
                "key": None,
                "content": text,
                "metadata": {},
                "session_id": None,
                "created_at": T,
                "updated_at": T,
                "last_accessed": None,
                "access_count": 0,
                "memory_tier": "RECENT",
                "content_hash": "",
                "token_count": 20,
            }
            out.write(json.dumps(record) + "\n")
        session = {
            "kind": "conversation_session",
            "project": "p0",
            "session_id": "long",
            "created_at": T,
            "updated_at": T,
            "config": "{}",
            "qa_summary": "",
            "qa_summary_from": None,
            "qa_summary_until": None,
            "next_entry": entries + 1,
            "next_summary": 1,
            "next_exchange": 1,
            "pending_summary": None,
        }
        out.write(json.dumps(session) + "\n")
        for n in range(1, entries + 1):
            entry = {
                "kind": "conversation_entry",
                "project": "p0",
                "session_id": "long",
                "entry_no": n,
                "type": "message",
                "role": "user",
                "content": f"message {n} about {WORDS[n % len(WORDS)]}",
                "tool_name": None,
                "arguments": None,
                "source": None,
                "is_error": False,
                "created_at": T,
                "token_count": 5,
                "compressed": False,
                "summary_no": None,
            }
            out.write(json.dumps(entry) + "\n")


class TimedSession(SqliteSession):
    """Records how long each write transaction holds the lock: from BEGIN IMMEDIATE
    succeeding to COMMIT returning (waiting for the lock is not holding it)."""

    holds: list[float]

    @asynccontextmanager
    async def write(self, operation: str) -> AsyncIterator[aiosqlite.Connection]:
        async with super().write(operation) as db:
            start = time.perf_counter()
            yield db
        self.holds.append(time.perf_counter() - start)


class TimedTransfer(SqliteMemoryTransfer):
    """Records how long each batch's call takes (lock wait, hold and the pause after)."""

    calls: list[float]

    async def insert_rows(self, kind: str, rows: Sequence[Row], *, keep_ids: bool) -> list[Any]:
        start = time.perf_counter()
        try:
            return await super().insert_rows(kind, rows, keep_ids=keep_ids)
        finally:
            self.calls.append(time.perf_counter() - start)


async def child(db: Path, source: Path, batch: int, gap_s: float) -> None:
    conn = await open_database(db)
    try:
        session = TimedSession(conn)
        session.holds = []
        store = TimedTransfer(session, db, gap_s=gap_s)
        store.calls = []
        lines = await anyio.Path(source).read_text(encoding="utf-8")
        parsed = transfer.parse_export(
            lines.splitlines(),
            schema_version=await store.schema_version(),
        )
        start = time.perf_counter()
        counts = await transfer.import_records(store, parsed, batch=batch or 10**9)
        wall = time.perf_counter() - start
    finally:
        await conn.close()
    print(
        json.dumps(
            {
                "rows": sum(c["imported"] for c in counts.stores.values()),
                "write_s": wall,
                "batches": len(store.calls),
                "max_hold_ms": max(session.holds) * 1000,
                "median_hold_ms": statistics.median(session.holds) * 1000,
                "max_call_ms": max(store.calls) * 1000,
            }
        )
    )


async def live_writer(db: Path, proc: subprocess.Popen[str]) -> dict[str, Any]:
    settings = Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))
    latencies: list[float] = []
    failures = 0
    async with open_container(settings) as c:
        n = 0
        while proc.poll() is None:
            n += 1
            start = time.perf_counter()
            try:
                await c.memories.append("live", Layer.EPISODIC, f"live write {n}")
                latencies.append(time.perf_counter() - start)
            except MemoryCoreError:
                failures += 1
            await asyncio.sleep(0.02)
    ms = sorted(x * 1000 for x in latencies)
    return {
        "appends": len(ms),
        "failures": failures,
        "append_p50_ms": statistics.median(ms) if ms else None,
        "append_p99_ms": ms[int(len(ms) * 0.99)] if ms else None,
        "append_max_ms": ms[-1] if ms else None,
    }


async def run_one(workdir: Path, source: Path, batch: int, gap_s: float) -> dict[str, Any]:
    db = workdir / f"import-{batch}-{gap_s}.db"
    conn = await open_database(db)
    await apply_migrations(conn)
    await conn.close()
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, before the writer loop
        [
            sys.executable,
            "-m",
            "bench.import_lock",
            "--child",
            str(db),
            str(source),
            str(batch),
            str(gap_s),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    writer = await live_writer(db, proc)
    out, _ = proc.communicate()
    return {"batch": batch or "all", "gap_s": gap_s, **json.loads(out), **writer}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--batches", default="250,1000,5000,0")
    parser.add_argument("--gaps", default=f"0,{WRITER_GAP_S}", help="pauses between batches (s)")
    parser.add_argument("--child", nargs=4, metavar=("DB", "FILE", "BATCH", "GAP"))
    args = parser.parse_args()
    configure_logging("WARNING")
    if args.child:
        db, source, batch, gap = args.child
        asyncio.run(child(Path(db), Path(source), int(batch), float(gap)))
        return
    with tempfile.TemporaryDirectory(prefix="memstrata-import-lock-") as tmp:
        workdir = Path(tmp)
        source = workdir / "export.jsonl"
        write_export(source, args.memories, args.entries)
        for batch in (int(b) for b in args.batches.split(",")):
            for gap in (float(g) for g in args.gaps.split(",")):
                if batch == 0 and gap:
                    continue  # one transaction: nothing to pause between
                result = asyncio.run(run_one(workdir, source, batch, gap))
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
