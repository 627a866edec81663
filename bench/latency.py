"""Speed and memory of the core paths, for docs/benchmarks.md (a benchmark, not a test).

    python -m bench.latency                 # sizes 1000 and 10000
    python -m bench.latency --sizes 1000 --json bench/results/latency.json

Measures, medians and p95 over repeated calls on this machine:
- cold start: process start to the answer of `tools/list` over stdio (`memstrata serve`);
- `recall` round trip over stdio;
- append throughput through MemoryService, without embeddings and with the default model;
- search latency per mode (keyword, semantic, hybrid) at each store size, the query embedding
  timed on its own;
- peak RSS of this process (the model loaded) and database bytes per 1k memories.

Reading it: p50 and p95 in ms per path and store size (a 70-word vocabulary, so keyword
search is a hard case); bench.scale measures the same paths on larger, realistic stores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog
from mcp import Client, StdioServerParameters

from bench.store import open_bench_store
from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import SearchRequest

WORDS = [
    "the",
    "a",
    "user",
    "project",
    "meeting",
    "report",
    "database",
    "server",
    "memory",
    "agent",
    "note",
    "task",
    "deadline",
    "customer",
    "invoice",
    "schedule",
    "weekly",
    "review",
    "python",
    "code",
    "bug",
    "fix",
    "release",
    "vector",
    "search",
    "query",
    "index",
    "cache",
    "latency",
    "budget",
    "team",
    "morning",
    "evening",
    "coffee",
    "travel",
    "flight",
    "hotel",
    "paris",
    "berlin",
    "tokyo",
    "likes",
    "prefers",
    "remembers",
    "forgot",
    "asked",
    "about",
    "yesterday",
    "tomorrow",
    "important",
    "urgent",
    "small",
    "large",
    "quickly",
    "slowly",
    "because",
    "after",
    "before",
    "during",
    "with",
    "without",
    "deploy",
    "staging",
    "production",
    "rollback",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))).capitalize() + "."


def dir_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir())


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "n": len(ordered),
    }


async def stdio_figures(repeats: int) -> dict[str, Any]:
    exe = Path(sys.executable).parent / "memstrata"
    db = Path(tempfile.mkdtemp(prefix="bench-stdio-")) / "m.db"
    env = {"MEMSTRATA_DB": str(db), "MEMSTRATA_LOG_LEVEL": "WARNING", "PATH": os.environ["PATH"]}
    params = StdioServerParameters(command=str(exe), args=["serve"], env=env)
    cold: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        async with Client(params) as client:
            await client.list_tools()
            cold.append((time.perf_counter() - started) * 1000)
    round_trips: list[float] = []
    async with Client(params) as client:
        await client.call_tool("learn", {"key": "user.editor", "value": "helix"})
        for _ in range(200):
            started = time.perf_counter()
            await client.call_tool("recall", {"key": "user.editor"})
            round_trips.append((time.perf_counter() - started) * 1000)
    return {"cold_start_to_tools_list_ms": summary(cold), "recall_stdio_ms": summary(round_trips)}


async def store_figures(size: int, embed: bool, rng: random.Random) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-store-"))
    stack = contextlib.AsyncExitStack()
    store = await stack.enter_async_context(
        open_bench_store(workdir / "m.db", model="default" if embed else "none")
    )
    service, lazy = store.memories, store.embedder
    texts = [f"{i} {sentence(rng)}" for i in range(size)]
    started = time.perf_counter()
    if embed:
        # Concurrent appends: the indexer batches their embeddings.
        for start in range(0, size, 64):
            await asyncio.gather(
                *(service.append("p", Layer.EPISODIC, t) for t in texts[start : start + 64])
            )
    else:
        for t in texts:
            await service.append("p", Layer.EPISODIC, t)
    append_rate = size / (time.perf_counter() - started)
    out: dict[str, Any] = {
        "size": size,
        "embeddings": embed,
        "appends_per_s": round(append_rate, 1),
    }
    modes = [SearchMode.KEYWORD] + ([SearchMode.SEMANTIC, SearchMode.HYBRID] if embed else [])
    queries = [sentence(rng) for _ in range(100)]
    for mode in modes:
        samples = []
        for q in queries:
            tick = time.perf_counter()
            await service.search(SearchRequest(project="p", query=q, mode=mode, limit=10))
            samples.append((time.perf_counter() - tick) * 1000)
        out[f"search_{mode.value}_ms"] = summary(samples)
    if lazy is not None:
        model = lazy.current()
        assert model is not None
        samples = []
        for q in queries:
            tick = time.perf_counter()
            model.embed([q])
            samples.append((time.perf_counter() - tick) * 1000)
        out["query_embedding_ms"] = summary(samples)
    samples = []
    for _ in range(100):
        tick = time.perf_counter()
        await service.load_context("p", limit=10)
        samples.append((time.perf_counter() - tick) * 1000)
    out["load_context_ms"] = summary(samples)
    await stack.aclose()
    out["db_bytes_per_1k"] = round(dir_bytes(workdir) / size * 1000)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    }
    results.update(await stdio_figures(args.repeats))
    results["stores"] = []
    for size in args.sizes:
        for embed in (False, True):
            results["stores"].append(await store_figures(size, embed, rng))
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return results


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=10, help="cold starts to time")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    results = asyncio.run(main_async(args))
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
