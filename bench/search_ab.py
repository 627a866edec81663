"""Hybrid search and get_memory_stats, old code against new, interleaved (a benchmark).

    python -m bench.scale --sizes 100000 --build-only --workdir W     # once, any checkout
    python -m bench.search_ab --workdir W --size 100000 \\
        --exe base=/work/wt-perf-base/.venv/bin --exe new=.venv/bin --rounds 4

On a machine shared with other work, one run of bench/scale.py per version measures the load
as much as the code. Here each label (a checkout's virtualenv bin directory) gets its own copy
of the store built by bench/scale.py (`scale-SIZE.db` in the workdir, migrated by its own code
at first open), and the labels take turns: each round starts one fresh process per label,
which warms up and then times the same 100 queries as bench/scale.py (hybrid, limit 10, the
query embedding included), the same queries keyword-only, and 20 `get_memory_stats` calls,
after the tier recalculation bench/scale.py makes first. The figures are the median of every
sample of a label, the range of the per-round medians, and the p95. With `--numpy`, each worker
also times numpy's exact cosine top 10 over the main project's vectors for the same queries:
the floor of that run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.command_line import store_parser


async def _worker(db: Path, cache: Path, numpy_floor: bool) -> dict[str, list[float]]:
    # Imported here: the orchestrator runs in any checkout, the worker in the one measured.
    from bench.scale import POOL_MAX, BenchClock, Corpus, build_pool, query_texts, settings_for
    from memory_core.domain.models import SearchMode
    from memory_core.embeddings.minilm_onnx import MiniLMOnnxEmbedder
    from memory_core.services import maintenance
    from memory_core.services.memories import SearchRequest
    from server.container import open_container

    corpus = Corpus(seed=7)
    real = MiniLMOnnxEmbedder()
    pool, _ = build_pool(corpus, POOL_MAX, cache, real)
    queries = query_texts(corpus, pool, 100)
    clock = BenchClock()
    out: dict[str, list[float]] = {
        "hybrid": [],
        "hybrid_cpu": [],
        "keyword": [],
        "stats": [],
        "numpy": [],
    }
    async with open_container(settings_for(db), clock) as store:
        assert store.embedder is not None
        await store.embedder.wait()
        tiers = store.settings.tiers
        await maintenance.recalculate_tiers(store.repo, clock, tiers)
        mem = store.memories
        for q in queries[:5]:
            await mem.search(SearchRequest(project="main", query=q, mode=SearchMode.HYBRID))
        for q in queries:
            tick, cpu = time.perf_counter(), time.process_time()
            await mem.search(
                SearchRequest(project="main", query=q, mode=SearchMode.HYBRID, limit=10)
            )
            out["hybrid"].append((time.perf_counter() - tick) * 1000)
            # CPU of every thread of the process (embedding, both connections' threads): the
            # work a search costs, which a loaded machine distorts far less than wall time.
            out["hybrid_cpu"].append((time.process_time() - cpu) * 1000)
        # Keyword-only: the FTS5 side alone (no embedding), the same queries.
        for q in queries:
            tick = time.perf_counter()
            await mem.search(
                SearchRequest(project="main", query=q, mode=SearchMode.KEYWORD, limit=10)
            )
            out["keyword"].append((time.perf_counter() - tick) * 1000)
        for _ in range(20):
            tick = time.perf_counter()
            await maintenance.memory_stats(store.repo, clock, tiers, "main")
            out["stats"].append((time.perf_counter() - tick) * 1000)
        if numpy_floor:
            out["numpy"] = await _numpy_floor(store, real.embed(queries))
    return out


async def _numpy_floor(store: Any, vectors: Any) -> list[float]:
    """The exact-search floor of the same run: cosine top 10 over the main project in numpy."""
    import numpy as np

    rows = await store.repo._session.fetch(
        "SELECT e.embedding FROM context_embeddings AS e"
        " JOIN context_snapshots AS s ON s.id = e.id WHERE s.project = 'main'"
    )
    matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    del rows
    samples = []
    for vector in vectors:
        tick = time.perf_counter()
        scores = matrix @ np.asarray(vector, dtype=np.float32)
        np.argpartition(-scores, 10)[:10]
        samples.append((time.perf_counter() - tick) * 1000)
    return samples


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[int(0.95 * (len(ordered) - 1))]


def main(argv: list[str] | None = None) -> None:
    parser = store_parser(__doc__)
    parser.add_argument("--exe", action="append", help="LABEL=venv bin dir")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--numpy", action="store_true", help="also time numpy exact search (the floor)"
    )
    parser.add_argument("--worker-db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cache = args.workdir / "cache"
    if args.worker_db:
        print(json.dumps(asyncio.run(_worker(args.worker_db, cache, args.numpy))))
        return
    bins = {k: Path(v).resolve() for k, v in (e.split("=", 1) for e in args.exe or [])}
    built = args.workdir / f"scale-{args.size}.db"
    dbs = {}
    for label in bins:
        dbs[label] = (args.workdir / f"ab-{label}-{args.size}.db").resolve()
        shutil.copyfile(built, dbs[label])

    def worker_args(label: str) -> list[str]:
        numpy = ["--numpy"] if args.numpy else []
        return ["--workdir", str(args.workdir.resolve()), *numpy, "--worker-db", str(dbs[label])]

    rounds: dict[str, list[dict[str, list[float]]]] = {label: [] for label in bins}
    for n in range(args.rounds):
        for label, bin_dir in bins.items():
            # This file's text as `-c`, run from the label's checkout: its bench/ and code
            # are imported (an older checkout may not have this file).
            done = subprocess.run(
                [str(bin_dir / "python"), "-c", Path(__file__).read_text(), *worker_args(label)],
                capture_output=True,
                text=True,
                check=True,
                cwd=bin_dir.parents[1],
            )
            rounds[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {n + 1} {label} done", file=sys.stderr, flush=True)
    figures: dict[str, Any] = {}
    for label, runs in rounds.items():
        figures[label] = {}
        for name in ("hybrid", "hybrid_cpu", "keyword", "stats", "numpy"):
            every = [x for run in runs for x in run.get(name, [])]
            if not every:
                continue
            medians = [statistics.median(run[name]) for run in runs if run.get(name)]
            figures[label][f"{name}_ms"] = {
                "p50": round(statistics.median(every), 2),
                "round_p50_min": round(min(medians), 2),
                "round_p50_max": round(max(medians), 2),
                "p95": round(_p95(every), 2),
                "n": len(every),
            }
    results = {
        "command": " ".join(["python -m bench.search_ab", *sys.argv[1:]]),
        "load_average_at_end": os.getloadavg(),
        "figures": figures,
    }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
