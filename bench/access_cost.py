"""What the kept access counters cost on the access-tracking path (a benchmark, not a test).

    python -m bench.access_cost                 # 10,000 memories, 6 rounds

Every search, recall and context load hands its hits out (`hand_out`: access_count + 1,
last_accessed, tier ACTIVE), so a trigger on that UPDATE runs on every read. Three copies of
one SQLite store, timed in turn each round so machine load hits them alike:
- `0006`: the counters' update trigger of migration 0006 (rows and bytes only);
- `0009`: migration 0009's, which also keeps `never_accessed` (its body runs on a row's first
  read only);
- `sum`: 0009 plus a trigger keeping the total of accesses per counter row, which has to write
  the counter row on every read (the design not taken).
Each round (starting with another copy each time) times `hand_out` of 10 rows never read
before ("first") and of 10 rows already read ("again"), 100 calls each, the same ids on every
copy.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.repository import SqliteMemoryRepository

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 10

# Migration 0006's update trigger, as it was before 0009 replaced it.
_TRIGGER_0006 = """
DROP TRIGGER memory_counts_au;
CREATE TRIGGER memory_counts_au AFTER UPDATE OF project, layer, memory_tier, content
ON context_snapshots
WHEN old.project IS NOT new.project OR old.layer IS NOT new.layer
     OR old.memory_tier IS NOT new.memory_tier
     OR length(CAST(old.content AS BLOB)) != length(CAST(new.content AS BLOB))
BEGIN
    UPDATE memory_counts SET n = n - 1, bytes = bytes - length(CAST(old.content AS BLOB))
    WHERE project = old.project AND layer = old.layer AND memory_tier = old.memory_tier;
    INSERT INTO memory_counts (project, layer, memory_tier, n, bytes)
    VALUES (new.project, new.layer, new.memory_tier, 1, length(CAST(new.content AS BLOB)))
    ON CONFLICT (project, layer, memory_tier)
    DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes;
END;
"""

# A total of accesses per counter row: a write to memory_counts on every read.
_TRIGGER_SUM = """
ALTER TABLE memory_counts ADD COLUMN accesses INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER memory_counts_accesses AFTER UPDATE OF access_count ON context_snapshots
BEGIN
    UPDATE memory_counts SET accesses = accesses + new.access_count - old.access_count
    WHERE project = new.project AND layer = new.layer AND memory_tier = new.memory_tier;
END;
"""

VARIANTS = {"0006": _TRIGGER_0006, "0009": "", "sum": _TRIGGER_SUM}


async def build(path: Path, size: int) -> None:
    rng = random.Random(3)
    conn = await open_database(path)
    await apply_migrations(conn)
    repo = SqliteMemoryRepository(SqliteSession(conn))
    words = [f"w{i}" for i in range(500)]
    for start in range(0, size, 1000):
        drafts = []
        for i in range(start, min(size, start + 1000)):
            text = f"{i} " + " ".join(rng.choices(words, k=12))
            drafts.append(
                MemoryDraft(
                    project="p",
                    layer=Layer.EPISODIC,
                    content=text,
                    content_hash=content_hash(text),
                    token_count=12,
                )
            )
        await repo.add_many(drafts, NOW)
    await conn.close()


async def run(size: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    work = Path(tempfile.mkdtemp())
    await build(work / "base.db", size)
    repos: dict[str, SqliteMemoryRepository] = {}
    conns = []
    for label, ddl in VARIANTS.items():
        shutil.copy(work / "base.db", work / f"{label}.db")
        conn = await open_database(work / f"{label}.db")
        await apply_migrations(conn)
        if ddl:
            await conn.executescript(ddl)
            await conn.commit()
        conns.append(conn)
        repos[label] = SqliteMemoryRepository(SqliteSession(conn))
    order = list(range(1, size + 1))
    random.Random(5).shuffle(order)
    fresh = iter(order)
    read: list[int] = []
    rng = random.Random(9)
    samples: dict[str, dict[str, list[float]]] = {
        label: {"first": [], "again": []} for label in VARIANTS
    }
    labels = list(repos)
    for round_no in range(rounds):
        first = [[next(fresh) for _ in range(BATCH)] for _ in range(100)]
        read.extend(i for batch in first for i in batch)
        again = [rng.sample(read, BATCH) for _ in range(100)]
        # Each round starts with another copy, so no copy always runs first.
        for label in labels[round_no % len(labels) :] + labels[: round_no % len(labels)]:
            repo = repos[label]
            for kind, batches in (("first", first), ("again", again)):
                for ids in batches:
                    tick = time.perf_counter()
                    await repo.hand_out("p", ids, NOW)
                    samples[label][kind].append((time.perf_counter() - tick) * 1000)
    for conn in conns:
        await conn.close()
    shutil.rmtree(work)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    samples = asyncio.run(run(args.size, args.rounds))
    base = {kind: statistics.median(v) for kind, v in samples["0006"].items()}
    for label, kinds in samples.items():
        cells = []
        for kind, values in kinds.items():
            p50 = statistics.median(values)
            cells.append(f"{kind} p50 {p50:.3f} ms ({p50 / base[kind]:.2f} x 0006)")
        print(f"{label}: hand_out of {BATCH} rows: " + ", ".join(cells))


if __name__ == "__main__":
    main()
