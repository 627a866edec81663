"""Where a search's time goes at scale, phase by phase (a benchmark, not a test).

    python -m bench.scale --sizes 100000 --build-only --workdir W     # once
    python -m bench.search_phases --workdir W --size 100000 --runs 3

Opens a copy of the store bench/scale.py built, as `serve` opens it (a serving process: the
access write deferred, the large project's keyword postings in memory) with the real model,
makes the tier recalculation bench/scale.py makes first, reads the postings, warms up, then
times bench/scale.py's 100 queries `runs` times in each mode (limit 10). Each phase is timed by
wrapping the service's own step in place:

- `embed`: the query embedding (`Indexer.embed_query`, the worker-thread hop included);
- `keyword`: the keyword half (`search_text`), which a hybrid search runs beside the
  embedding on the reader connection, so it is not on the path unless it is the longer one;
- `vector`: the vector search (`search_vectors`: coarse bits, int8 narrowing, exact rescore);
- `first`: both halves together (`_first_candidates`), from the start to both lists;
- `vector rows`: reading the rows of the vector matches the keyword half did not return;
- `fuse`: adding the vector matches to the candidates (the rows read included);
- `rank`: `rank_candidates` (fusion, tiers, recency, lifts, the hits' signals);
- `fold`: folding versions of one fact (`_fold_versions`, its stored-vector read included);
- `hand out`: computing the hits as accessed (the write itself is deferred).

`total` is the whole `search` call and `cpu` its CPU time over every thread of the process.
Last, the query embedding alone: right after a semantic search (untimed) and right after that
embedding, paired over each query, then in a tight loop over the same queries, as
bench/scale.py's floor measures it. Its gap to `embed` is what running inside a search costs
the model; the pair splits that gap into what runs beside the embedding and what a search
leaves behind for the next one. With
`--pause-ms`, each search (and each embedding alone) is followed by that long an idle pause,
a client between two prompts, instead of the next one at once.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import statistics
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.command_line import store_parser

PHASES = (
    ("embed", "query embedding"),
    ("keyword", "keyword half (beside the embedding)"),
    ("vector", "vector search"),
    ("first", "both halves"),
    ("vector_rows", "vector rows"),
    ("fuse", "fuse (rows included)"),
    ("rank", "rank"),
    ("fold", "fold versions"),
    ("hand_out", "hand out"),
    ("total", "total"),
    ("cpu", "CPU, all threads"),
)


class Timings:
    """Samples per phase, in milliseconds."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self._wrapped: list[tuple[Any, str, Any]] = []

    def add(self, phase: str, started: float) -> None:
        self.samples.setdefault(phase, []).append((time.perf_counter() - started) * 1000)

    def wrap(self, owner: Any, attr: str, phase: str) -> None:
        """Time every call of `owner.attr` (a coroutine method or function) as `phase`."""
        original: Callable[..., Awaitable[Any]] = getattr(owner, attr)

        @functools.wraps(original)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.add(phase, started)

        self._wrapped.append((owner, attr, original))
        # The service is a frozen dataclass: set the wrapper past its guard.
        object.__setattr__(owner, attr, timed)

    def wrap_sync(self, owner: Any, attr: str, phase: str) -> None:
        """Time every call of a plain function `owner.attr` as `phase`."""
        original: Callable[..., Any] = getattr(owner, attr)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(phase, started)

        self._wrapped.append((owner, attr, original))
        setattr(owner, attr, timed)

    def unwrap(self) -> None:
        """Put back what `wrap` replaced: a module's function, or an instance's own method."""
        for owner, attr, original in reversed(self._wrapped):
            if isinstance(owner, types.ModuleType):
                setattr(owner, attr, original)
            else:
                object.__delattr__(owner, attr)  # the class's method shows through again
        self._wrapped.clear()

    def summary(self) -> dict[str, dict[str, float]]:
        return {
            phase: {
                "p50": round(statistics.median(values), 2),
                "mean": round(statistics.mean(values), 2),
                "n": len(values),
            }
            for phase, values in self.samples.items()
        }


def _instrument(timings: Timings, store: Any, module: types.ModuleType) -> None:
    """Wrap each step of a search (see the module docstring) to time it."""
    mem = store.memories
    timings.wrap(store.indexer, "embed_query", "embed")
    timings.wrap(store.indexer.vectors, "search_vectors", "vector")
    # Hybrid runs the keyword half on the reader connection, keyword mode on the main one.
    timings.wrap(mem.repo, "search_text", "keyword")
    if mem.keyword_reader is not None:
        timings.wrap(mem.keyword_reader, "search_text", "keyword")
    timings.wrap(mem, "_first_candidates", "first")
    timings.wrap(mem, "_vector_rows", "vector_rows")
    timings.wrap(mem, "_add_vector_candidates", "fuse")
    timings.wrap(mem, "_fold_versions", "fold")
    timings.wrap_sync(module, "rank_candidates", "rank")
    timings.wrap(module, "hand_out_read", "hand_out")


def _embed_alone(
    embed: Callable[[list[str]], Any], queries: list[str], runs: int, pause_ms: float
) -> dict[str, float]:
    """The query embedding alone, as bench/scale.py's floor times it (after the same pause)."""
    alone = Timings()
    for q in queries[:5]:
        embed([q])
    for _ in range(runs):
        for q in queries:
            started = time.perf_counter()
            embed([q])
            alone.add("embed_alone", started)
            if pause_ms:
                # The same idle pause with nothing between: what the pause alone costs the model.
                time.sleep(pause_ms / 1000)
    return alone.summary()["embed_alone"]


async def _embed_after_search(
    search: Callable[[str], Awaitable[Any]],
    embed: Callable[[list[str]], Any],
    queries: list[str],
    runs: int,
) -> dict[str, dict[str, float]]:
    """The query embedding alone right after a search, and right after that embedding.

    Each query is searched (untimed), embedded (timed: `after_search`), and embedded again
    (timed: `after_embedding`), so the two are paired over the same texts at the same moment
    (this host's speed drifts within minutes). Against `embed` (inside a search) this splits
    the gap: what runs beside the embedding in a search (the keyword half, the thread hop),
    and what a search leaves behind for the next embedding (caches, the threads' placement).
    """
    paired = Timings()
    for _ in range(runs):
        for q in queries:
            await search(q)
            for phase in ("after_search", "after_embedding"):
                started = time.perf_counter()
                embed([q])
                paired.add(phase, started)
    return paired.summary()


async def measure(db: Path, cache: Path, runs: int, pause_ms: float) -> dict[str, Any]:
    """Phase timings per mode, and the query embedding alone."""
    from bench.scale import (
        POOL_MAX,
        BenchClock,
        Corpus,
        build_pool,
        query_mix,
        settings_for,
        stored_texts,
    )
    from memory_core.domain.models import SearchMode
    from memory_core.embeddings import LazyEmbedder
    from memory_core.embeddings.minilm_onnx import DIMS, MODEL_ID, MiniLMOnnxEmbedder
    from memory_core.services import maintenance
    from memory_core.services import memories as memories_module
    from memory_core.services.memories import SearchRequest
    from server.container import open_container

    corpus = Corpus(seed=7)
    real = MiniLMOnnxEmbedder()
    pool, _ = build_pool(corpus, POOL_MAX, cache, real)
    clock = BenchClock()
    lazy = LazyEmbedder(lambda: real, model_id=MODEL_ID, dims=DIMS)
    out: dict[str, Any] = {"load_average": [], "modes": {}, "pause_ms": pause_ms}
    async with open_container(settings_for(db), clock, embedder=lazy, serving=True) as store:
        await lazy.wait()
        await maintenance.recalculate_tiers(store.repo, clock, store.settings.tiers)
        queries = [q.text for q in query_mix(corpus, pool, 100, await stored_texts(store, 50))]
        mem = store.memories
        await mem.search(SearchRequest(project="main", query=queries[0], limit=10))
        if store.backend is not None:
            await store.backend.settled()  # the postings are read
        for q in queries[:10]:
            await mem.search(SearchRequest(project="main", query=q, limit=10))
        for mode in (SearchMode.HYBRID, SearchMode.SEMANTIC, SearchMode.KEYWORD):
            timings = Timings()
            _instrument(timings, store, memories_module)
            try:
                for _ in range(runs):
                    out["load_average"].append(round(os.getloadavg()[0], 2))
                    for q in queries:
                        request = SearchRequest(project="main", query=q, mode=mode, limit=10)
                        started, cpu = time.perf_counter(), time.process_time()
                        await mem.search(request)
                        timings.add("total", started)
                        timings.samples.setdefault("cpu", []).append(
                            (time.process_time() - cpu) * 1000
                        )
                        if pause_ms:
                            await asyncio.sleep(pause_ms / 1000)
            finally:
                timings.unwrap()
            out["modes"][mode.value] = timings.summary()

        async def semantic(q: str) -> None:
            await mem.search(
                SearchRequest(project="main", query=q, mode=SearchMode.SEMANTIC, limit=10)
            )

        out["embed_paired"] = await _embed_after_search(semantic, real.embed, queries, runs)
    out["embed_alone"] = _embed_alone(real.embed, queries, runs, pause_ms)
    return out


def markdown(results: dict[str, Any]) -> str:
    """The phases as a table: p50 (mean) in ms per mode."""
    modes = list(results["modes"])
    lines = [
        f"| phase | {' | '.join(modes)} |",
        f"| --- | {' | '.join('---:' for _ in modes)} |",
    ]
    for phase, label in PHASES:
        cells = []
        for mode in modes:
            figure = results["modes"][mode].get(phase)
            cells.append(f"{figure['p50']:.2f} ({figure['mean']:.2f})" if figure else "")
        if any(cells):
            lines.append(f"| {label} | {' | '.join(cells)} |")
    for phase, label in (("after_search", "a search"), ("after_embedding", "that embedding")):
        figure = results.get("embed_paired", {}).get(phase)
        if figure:
            lines.append(
                f"| query embedding alone, right after {label} | {figure['p50']:.2f}"
                f" ({figure['mean']:.2f}) |"
            )
    alone = results["embed_alone"]
    where = "after the same pause" if results.get("pause_ms") else "tight loop"
    lines.append(f"| query embedding alone, {where} | {alone['p50']:.2f} ({alone['mean']:.2f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = store_parser(__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pause-ms", type=float, default=0.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    built = args.workdir / f"scale-{args.size}.db"
    # Searching changes a store (access counts, tiers): measure a copy.
    db = args.workdir / f"phases-{args.size}.db"
    shutil.copyfile(built, db)
    try:
        results = asyncio.run(measure(db, args.workdir / "cache", args.runs, args.pause_ms))
    finally:
        for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            leftover.unlink(missing_ok=True)
    results["size"] = args.size
    print(
        f"{args.size:,} memories, {args.runs} run(s) of 100 queries per mode, load"
        f" {results['load_average']}, pause {args.pause_ms} ms; p50 (mean) in ms:\n"
    )
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
