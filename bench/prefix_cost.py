"""Keyword search latency with and without prefix matching, interleaved on one store.

    python -m bench.prefix_cost            # 10,000 memories, 3 rounds of 100 queries each

Same synthetic sentences as bench/latency.py, no embedding model; each round runs the 100
queries with prefixes off (0) and from 3 characters, so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.latency import sentence
from bench.store import open_bench_store
from memory_core.config import RankingPolicy
from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import SearchRequest


async def run(size: int, rounds: int) -> dict[int, tuple[float, float]]:
    rng = random.Random(7)
    async with open_bench_store(Path(tempfile.mkdtemp()) / "m.db", model="none") as store:
        service = store.memories
        for i in range(size):
            await service.append("p", Layer.EPISODIC, f"{i} {sentence(rng)}")
        queries = [sentence(rng) for _ in range(100)]
        samples: dict[int, list[float]] = {0: [], 3: []}
        for _ in range(rounds):
            for chars, found in samples.items():
                ranking = RankingPolicy(keyword_prefix_min_chars=chars)
                variant = dataclasses.replace(service, ranking=ranking)
                for q in queries:
                    tick = time.perf_counter()
                    request = SearchRequest(project="p", query=q, mode=SearchMode.KEYWORD)
                    await variant.search(request)
                    found.append((time.perf_counter() - tick) * 1000)
    return {
        chars: (statistics.median(v), sorted(v)[int(0.95 * (len(v) - 1))])
        for chars, v in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for chars, (p50, p95) in asyncio.run(run(args.size, args.rounds)).items():
        print(f"prefix_min_chars={chars}: keyword p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
