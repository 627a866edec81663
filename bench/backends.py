"""SQLite vs PostgreSQL on the storage paths (a benchmark, not a test).

    python -m bench.backends --backend sqlite --sizes 10000
    python -m bench.backends --backend postgres --sizes 10000  # or MEMSTRATA_BENCH_DATABASE_URL

Through the server's composition root (MemoryService on the configured backend), keyword
only for the appends; vectors are random unit 384-d vectors written straight to the vector
index, so the figure is the index's, not the embedding model's. Measures append throughput,
keyword and vector search latency (p50/p95 of 100 queries), tier recalculation over the whole
store after a month, and pruning of every row (all EXPIRED by then).

Reading it: compare the two backends' lines of one machine and load; each figure is the
storage path alone (no model), so a gap is the backend's, not the embedder's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import tempfile
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from bench.latency import sentence
from bench.store import FIXED_NOW
from memory_core.domain.models import Layer, SearchMode
from memory_core.domain.tiers import tier_cutoffs
from memory_core.services.memories import SearchRequest
from server.backends import open_backend
from server.container import open_container
from server.settings import ScheduleSettings, Settings


class Clock:
    def __init__(self) -> None:
        self.at = FIXED_NOW

    def now(self):
        return self.at


def pct(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def postgres_url() -> str:
    url = os.environ.get("MEMSTRATA_BENCH_DATABASE_URL")
    if url:
        return url
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        srv = pgserver.get_server(  # type: ignore[attr-defined]
            Path(tempfile.mkdtemp(prefix="bench-pg-")), cleanup_mode="delete"
        )
        globals()["_server"] = srv  # keep it running until the process ends
        return str(srv.get_uri())


async def run(backend: str, size: int, url: str | None) -> dict[str, Any]:
    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="bench-backend-"))
    settings = Settings(
        db=work / "m.db",
        database_url=url,
        embedding_model="none",
        schedule=ScheduleSettings(enabled=False),
        project="bench",
    )
    clock = Clock()
    out: dict[str, Any] = {"backend": backend, "size": size}
    async with open_container(settings, clock) as container:
        texts = [f"{i} {sentence(rng)}" for i in range(size)]
        started = time.perf_counter()
        for start in range(0, size, 16):  # 16 concurrent callers, as several clients would
            await asyncio.gather(
                *(
                    container.memories.append("p", Layer.EPISODIC, t)
                    for t in texts[start : start + 16]
                )
            )
        out["appends_per_s"] = round(size / (time.perf_counter() - started), 1)
        queries = [sentence(rng) for _ in range(100)]
        samples = []
        for q in queries:
            tick = time.perf_counter()
            await container.memories.search(
                SearchRequest(project="p", query=q, mode=SearchMode.KEYWORD, limit=10)
            )
            samples.append((time.perf_counter() - tick) * 1000)
        out["search_keyword_ms"] = pct(samples)
    async with open_backend(settings) as opened:
        rows = await opened.repo.list_layer("p", Layer.EPISODIC, None, newest_first=False)
        for label, exact_max in (("exact", 10**9), ("index", 0)):
            vectors = opened.vectors(exact_max)
            if label == "exact":
                await vectors.ensure_model("bench-random-384", 384)
                matrix = np.random.default_rng(7).standard_normal((len(rows), 384))
                matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
                tick = time.perf_counter()
                for start in range(0, len(rows), 1000):
                    await vectors.put_vectors(
                        [
                            (m, m.content_hash, matrix[start + i])
                            for i, m in enumerate(rows[start : start + 1000])
                        ]
                    )
                out["vectors_put_per_s"] = round(len(rows) / (time.perf_counter() - tick), 1)
            samples = []
            for _ in range(100):
                raw = np.random.default_rng(rng.randrange(10**6)).standard_normal(384)
                qv = (raw / np.linalg.norm(raw)).astype(np.float32)
                tick = time.perf_counter()
                await vectors.search_vectors("p", qv, layer=None, limit=10)
                samples.append((time.perf_counter() - tick) * 1000)
            out[f"search_vector_{label}_ms"] = pct(samples)
        month = tier_cutoffs(FIXED_NOW + timedelta(days=40), settings.tiers)
        tick = time.perf_counter()
        changed = await opened.repo.recalculate_tiers(month, None)
        out["recalculate_s"] = round(time.perf_counter() - tick, 3)
        out["recalculate_changed"] = changed
        tick = time.perf_counter()
        pruned = await opened.repo.prune_expired(month, None, limit=None, dry_run=False)
        out["prune_all_s"] = round(time.perf_counter() - tick, 3)
        out["pruned"] = len(pruned.ids)
    return out


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    url = postgres_url() if args.backend == "postgres" else None
    results = [asyncio.run(run(args.backend, size, url)) for size in args.sizes]
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
