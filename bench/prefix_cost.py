"""Keyword search latency with and without prefix matching, interleaved on one store.

    python -m bench.prefix_cost            # 10,000 memories, 3 rounds of 100 queries each

Same synthetic sentences as bench/latency.py, no embedding model; each round runs the 100
queries in turn with prefixes off (`off`), from 3 characters for every word (`always`, the rule
of migration 0007, restored here by making the whole-word probe find no common word) and from 3
characters for the words that do not fill the candidate list whole (`rare`, the rule now), so
machine load hits all three alike.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path

import structlog

from bench.latency import sentence
from bench.store import open_bench_store
from memory_core.config import RankingPolicy
from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import SearchRequest
from memory_core.storage.sqlite.repository import SqliteMemoryRepository


async def _no_common_words(
    self: SqliteMemoryRepository, table: str, words: object, at_least: int
) -> set[str]:
    return set()


VARIANTS = {"off": 0, "always": 3, "rare": 3}


async def run(size: int, rounds: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(7)
    async with open_bench_store(Path(tempfile.mkdtemp()) / "m.db", model="none") as store:
        service = store.memories
        for i in range(size):
            await service.append("p", Layer.EPISODIC, f"{i} {sentence(rng)}")
        queries = [sentence(rng) for _ in range(100)]
        samples: dict[str, list[float]] = {label: [] for label in VARIANTS}
        probe = SqliteMemoryRepository._common_words
        for _ in range(rounds):
            for label, found in samples.items():
                ranking = RankingPolicy(keyword_prefix_min_chars=VARIANTS[label])
                variant = dataclasses.replace(service, ranking=ranking)
                rule = _no_common_words if label == "always" else probe
                SqliteMemoryRepository._common_words = rule  # type: ignore[method-assign]
                for q in queries:
                    tick = time.perf_counter()
                    request = SearchRequest(project="p", query=q, mode=SearchMode.KEYWORD)
                    await variant.search(request)
                    found.append((time.perf_counter() - tick) * 1000)
        SqliteMemoryRepository._common_words = probe  # type: ignore[method-assign]
    return {
        label: (statistics.median(v), sorted(v)[int(0.95 * (len(v) - 1))])
        for label, v in samples.items()
    }


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = asyncio.run(run(args.size, args.rounds))
    for label, (p50, p95) in results.items():
        ratio = p50 / results["off"][0]
        print(f"prefixes {label}: keyword p50 {p50:.1f} ms, p95 {p95:.1f} ms, / off {ratio:.2f}")


if __name__ == "__main__":
    main()
