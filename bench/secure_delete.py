"""What PRAGMA secure_delete costs on pruning and forgetting (a benchmark, not a test).

    python -m bench.secure_delete --size 100000 --rounds 3

Builds one store of `size` memories (keyword only, so no model) whose rows are all EXPIRED
60 days later, then in interleaved rounds copies it and, on each copy, with secure_delete off
and on: prunes 10,000 rows through maintenance.prune_expired, and forgets 200 rows one by one
through the repository. Prints medians per mode and the ratio.

Reading it: ON / OFF is what zeroing freed pages costs; it stays on (a forgotten memory must
not stay readable in the file's free pages).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from bench.store import FIXED_NOW, open_bench_store
from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Layer
from memory_core.services import maintenance
from memory_core.services.memories import AppendItem
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, open_database

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "release",
    "deploy",
    "billing",
    "search",
    "cache",
    "latency",
    "budget",
    "team",
]


class Later:
    def now(self) -> datetime:
        return FIXED_NOW + timedelta(days=60)


async def build(path: Path, size: int) -> None:
    async with open_bench_store(path, model="none") as store:
        for start in range(0, size, 1000):
            items = [
                AppendItem(
                    layer=Layer.EPISODIC,
                    content=" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 20)) + f" {i}",
                )
                for i in range(start, min(size, start + 1000))
            ]
            await store.memories.append_many("bench", items)


async def measure(path: Path, secure: bool) -> tuple[float, float]:
    db = await open_database(path, secure_delete=secure)
    try:
        repo = SqliteMemoryRepository(SqliteSession(db))
        t = time.perf_counter()
        out = await maintenance.prune_expired(
            repo, Later(), TierPolicy(), project="bench", limit=10_000
        )
        prune = time.perf_counter() - t
        assert len(out.ids) == 10_000
        ids = [
            r[0] for r in await db.execute_fetchall("SELECT id FROM context_snapshots LIMIT 200")
        ]
        t = time.perf_counter()
        for memory_id in ids:
            await repo.delete("bench", [memory_id])
        forget = (time.perf_counter() - t) / len(ids)
        return prune, forget
    finally:
        await db.close()


def _copy_store(base: Path, copy: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
        if Path(f"{base}{suffix}").exists():
            shutil.copy(f"{base}{suffix}", f"{copy}{suffix}")


async def main_async(size: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.db"
        await build(base, size)
        results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for _ in range(rounds):
            for secure in (False, True):
                copy = Path(tmp) / f"copy-{secure}.db"
                await asyncio.to_thread(_copy_store, base, copy)
                results[secure].append(await measure(copy, secure))
        for secure, runs in results.items():
            prune = statistics.median(r[0] for r in runs)
            forget = statistics.median(r[1] for r in runs) * 1000
            print(
                f"secure_delete {'ON ' if secure else 'OFF'}: prune 10,000 of {size:,} "
                f"{prune:.2f} s, forget one {forget:.2f} ms (median of {rounds})"
            )
        on = statistics.median(r[0] for r in results[True])
        off = statistics.median(r[0] for r in results[False])
        print(f"prune ratio ON/OFF: {on / off:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main_async(args.size, args.rounds))


if __name__ == "__main__":
    main()
