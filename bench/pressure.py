"""What the storage cap costs (issue 33.4): the check on every write, and enforcement.

    python -m bench.pressure                          # sizes 100000 1000000
    python -m bench.pressure --sizes 100000 --json bench/results/pressure.json

One project of N memories, built in bulk by SQL (`INSERT ... SELECT` over a counter, through
the real triggers: kept counters, keyword tables, identity indexes), not through `append`:
bench/scale.py's append path builds 1M rows in ~5.5 minutes with pooled vectors, and the cap
reads and deletes rows, not vectors. Vectors are left out (model `none`); the cap deletes a
row's vectors by the prune's own statements (storage/sqlite/pressure.delete_listed), whose
cost per row at 1M is in docs/benchmarks.md (prune). Ages follow bench/scale.py's mix (1 %
ACTIVE, 4 % RECENT, 35 % ARCHIVED, 60 % EXPIRED); use counts 0-5.

Measured per size (median and p95 unless said):
- the check a write makes: `project_size` (the kept counters), alone;
- an append with no cap, and with a cap the project is under (the check on its path),
  alternated between two stores open on the file;
- listing the candidates of an enforcement (5 % of the project: the low-water mark's share),
  and its longest statement (the listing reads in pages, releasing the connection between);
- one enforcement from just over the cap down to 95 % of it: total, rows/s, and each batch
  (one transaction, the longest the write lock is held); the prune's batch of 5,000 on the
  same store for comparison;
- the append that crosses the cap with enforcement in the background (the default) and,
  on a fresh copy of the same over-cap state, inline (what a write would wait for).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import structlog

from bench.latency import summary
from memory_core.config.policies import PressurePolicy
from memory_core.domain.models import Layer
from memory_core.domain.tiers import tier_cutoffs
from memory_core.services.pressure import CapOnWrite, pressure_store
from server.container import open_container
from server.settings import ScheduleSettings, Settings

PROJECT = "main"
CHUNK = 50_000
NOW = datetime.now(UTC).replace(microsecond=0)

# Age in seconds from a row's hash h in [0, 1000): the tier mix of bench/scale.py.
_AGE = """CASE
    WHEN h < 10 THEN 60 + h * 300
    WHEN h < 50 THEN 3900 + (h - 10) * 1900
    WHEN h < 400 THEN 90000 + (h - 50) * 6700
    ELSE 2678400 + (h - 400) * 21000 END"""
_TIER = """CASE WHEN h < 10 THEN 'ACTIVE' WHEN h < 50 THEN 'RECENT'
    WHEN h < 400 THEN 'ARCHIVED' ELSE 'EXPIRED' END"""
_STAMP = "strftime('%Y-%m-%dT%H:%M:%S', :now, printf('-%d seconds', age)) || '.000000Z'"
_INSERT = f"""
WITH RECURSIVE seq(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM seq WHERE i < :last),
hashed AS (SELECT i, (i * 2654435761) % 1000 AS h, (i * 7919) % 6 AS uses FROM seq),
aged AS (SELECT i, h, uses, {_AGE} AS age FROM hashed)
INSERT INTO context_snapshots (project, layer, content, created_at, updated_at, last_accessed,
    access_count, memory_tier, content_hash, token_count)
SELECT :project, 'episodic',
    'note ' || i || ' on topic ' || (i % 997) || ' with detail ' || (i % 101) || ' and more',
    {_STAMP}, {_STAMP}, CASE WHEN uses > 0 THEN {_STAMP} END, uses,
    {_TIER}, printf('%064x', i), 12
FROM aged
"""


class FixedClock:
    """The instant the store was built at."""

    def now(self) -> datetime:
        return NOW


def settings_for(db: Path, cap: int | None) -> Settings:
    return Settings(
        db=db,
        embedding_model="none",
        schedule=ScheduleSettings(enabled=False),
        pressure=PressurePolicy(max_memories=cap),
    )


def load() -> str:
    """`uptime`'s load averages."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def build(db: Path, size: int, log: Callable[[str], None]) -> float:
    """A migrated store with `size` rows in PROJECT; seconds spent."""
    import sqlean

    started = time.perf_counter()
    async with open_container(settings_for(db, None), FixedClock()):
        pass  # migrations
    conn = sqlean.connect(str(db), isolation_level=None)
    try:
        for first in range(1, size + 1, CHUNK):
            last = min(first + CHUNK - 1, size)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                _INSERT, {"first": first, "last": last, "project": PROJECT, "now": _iso(NOW)}
            )
            conn.execute("COMMIT")
            log(f"  {last} rows ({time.perf_counter() - started:.0f} s)")
    finally:
        conn.close()
    async with open_container(settings_for(db, None), FixedClock()):
        pass  # builds the project's keyword table as any first open after a bulk load does
    return time.perf_counter() - started


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


async def timed(calls: list[Callable[[], Awaitable[Any]]]) -> dict[str, float]:
    samples = []
    for call in calls:
        tick = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - tick) * 1000)
    return summary(samples[3:] if len(samples) > 10 else samples)


async def append_costs(db: Path, size: int, serial: list[int]) -> dict[str, Any]:
    """The check alone, and appends without a cap and under one, alternated.

    One store without a cap and one with a cap the project is under, open side by side on
    the file; their appends alternate, so the machine's load weighs on both series alike.
    """
    samples: dict[str, list[float]] = {"no_cap": [], "under_cap": []}
    async with (
        open_container(settings_for(db, None), FixedClock()) as plain,
        open_container(settings_for(db, size * 10), FixedClock()) as capped,
    ):
        store = pressure_store(capped.repo)
        assert store is not None
        assert capped.memories.cap is not None
        check = partial(store.project_size, PROJECT)
        figures: dict[str, Any] = {"check_ms": await timed([check] * 2000)}
        for n in range(300):
            for label, c in (("no_cap", plain), ("under_cap", capped))[:: 1 if n % 2 else -1]:
                serial[0] += 1
                tick = time.perf_counter()
                await c.memories.append(PROJECT, Layer.EPISODIC, f"fresh write {serial[0]}")
                samples[label].append((time.perf_counter() - tick) * 1000)
    for label, found in samples.items():
        figures[f"append_{label}_ms"] = summary(found[3:])
    return figures


async def enforcement(db: Path, size: int, serial: list[int]) -> dict[str, Any]:
    """Listing, then one enforcement from just over the cap down to 95 % of it."""
    figures: dict[str, Any] = {}
    cap = size  # the appends above put the project a few hundred over
    async with open_container(settings_for(db, cap), FixedClock()) as c:
        store = pressure_store(c.repo)
        assert store is not None
        held = await store.project_size(PROJECT)
        need = held - c.settings.pressure.target()  # type: ignore[operator]
        bound = tier_cutoffs(NOW, c.settings.tiers).archived_after
        # The longest statement of a listing: how long it holds the store's one connection.
        session = c.repo._session  # type: ignore[attr-defined]
        statements: list[float] = []
        fetch = session.fetch

        async def timed_fetch(*args: Any) -> Any:
            tick = time.perf_counter()
            found = await fetch(*args)
            statements.append((time.perf_counter() - tick) * 1000)
            return found

        session.fetch = timed_fetch
        figures["listing_ms"] = await timed(
            [lambda: store.eviction_candidates(PROJECT, bound, limit=need) for _ in range(3)]
        )
        session.fetch = fetch
        figures["listing_statement_max_ms"] = round(max(statements), 1)
        figures["listing_statements"] = len(statements) // 3
        # Each batch is one call of the store's evict (one transaction): time it there.
        batches: list[float] = []
        evict = store.evict

        async def timed_evict(*args: Any) -> list[int]:
            tick = time.perf_counter()
            done = await evict(*args)
            batches.append((time.perf_counter() - tick) * 1000)
            return done

        c.repo.evict = timed_evict  # type: ignore[attr-defined]
        started = time.perf_counter()
        outcome = await c.maintenance.enforce_cap(PROJECT)
        spent = time.perf_counter() - started
        # The prune's own batch delete on rows of the same store, for comparison.
        cutoffs = tier_cutoffs(NOW, c.settings.tiers)
        listed = await c.repo.prune_expired(cutoffs, PROJECT, limit=5000, dry_run=True)
        tick = time.perf_counter()
        await c.repo.delete_expired(listed.ids, cutoffs)
        figures["prune_batch_ms"] = round((time.perf_counter() - tick) * 1000, 1)
        figures["enforce"] = {
            "rows": len(outcome.ids),
            "s": round(spent, 2),
            "rows_per_s": round(len(outcome.ids) / spent),
            "batch_ms": summary(batches) | {"max": round(max(batches), 1)},
        }
    return figures


async def crossing_write(db: Path, size: int, serial: list[int]) -> dict[str, Any]:
    """The append that crosses the cap: background (default) and inline, from one state."""
    figures: dict[str, Any] = {}
    copy = db.with_name("inline.db")
    remove(copy)
    shutil.copy(db, copy)  # closed and checkpointed: the file is the whole store
    for label, path, background in (("background", db, True), ("inline", copy, False)):
        async with open_container(settings_for(path, None), FixedClock()) as c:
            store = pressure_store(c.repo)
            assert store is not None
            # Exactly at the cap: the next write crosses it.
            policy = PressurePolicy(max_memories=await store.project_size(PROJECT))
            guard = CapOnWrite(
                store=store,
                clock=FixedClock(),
                tiers=c.settings.tiers,
                policy=policy,
                background=background,
            )
            capped = dataclasses.replace(c.memories, cap=guard)
            serial[0] += 1
            tick = time.perf_counter()
            await capped.append(PROJECT, Layer.EPISODIC, f"the write over the cap {serial[0]}")
            figures[f"crossing_{label}_ms"] = round((time.perf_counter() - tick) * 1000, 1)
            await guard.drain()
    remove(copy)
    return figures


async def run_size(size: int, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    db = workdir / f"pressure-{size}.db"
    remove(db)
    result: dict[str, Any] = {"size": size, "load_before": load()}
    log(f"building {size} rows")
    result["build_s"] = round(await build(db, size, log), 1)
    result["db_mb"] = megabytes(db)
    serial = [0]
    log("appends")
    result |= await append_costs(db, size, serial)
    log("enforcement")
    result |= await enforcement(db, size, serial)
    log("crossing write")
    result |= await crossing_write(db, size, serial)
    result["load_after"] = load()
    remove(db)
    return result


def remove(db: Path) -> None:
    """Delete a store file and its WAL/SHM companions."""
    for p in db.parent.glob(db.name + "*"):
        p.unlink()


def megabytes(db: Path) -> int:
    """A store file and its companions, in MB."""
    return round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6)


def markdown(results: list[dict[str, Any]]) -> str:
    def cell(f: dict[str, float]) -> str:
        return f"{f['p50']} / {f['p95']}"

    rows = [
        "| memories | check (ms p50/p95) | append, no cap | append, under a cap | "
        "listing 5 % (ms; longest statement) | enforcement | batch of 5,000 (ms p50 / max; "
        "prune's) | crossing write background / inline (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        e = r["enforce"]
        rows.append(
            f"| {r['size']:,} | {cell(r['check_ms'])} | {cell(r['append_no_cap_ms'])} | "
            f"{cell(r['append_under_cap_ms'])} | {r['listing_ms']['p50']}; "
            f"{r['listing_statement_max_ms']} | "
            f"{e['rows']:,} rows in {e['s']} s ({e['rows_per_s']:,}/s) | "
            f"{e['batch_ms']['p50']} / {e['batch_ms']['max']}; {r['prune_batch_ms']} | "
            f"{r['crossing_background_ms']} / {r['crossing_inline_ms']} |"
        )
    loads = [
        f"- {r['size']:,}: before `{r['load_before']}`, after `{r['load_after']}`" for r in results
    ]
    return "\n".join([*rows, "", "Load (uptime):", *loads])


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    def log(line: str) -> None:
        print(line, flush=True)

    results = []
    for size in args.sizes:
        results.append(await run_size(size, workdir, log))
        log(json.dumps(results[-1]))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--workdir", help="where the stores are built (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    os.environ.setdefault("MEMSTRATA_LOG_LEVEL", "WARNING")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-pressure-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = asyncio.run(main_async(args, workdir))
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
