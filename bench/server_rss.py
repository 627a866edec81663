"""Cold start, recall round trip and RSS of a real `memstrata serve` over stdio.

    python -m bench.server_rss [--db PATH]                       # fresh store, 30 searches
    python -m bench.server_rss --db W/scale-100000.db --searches 100000 --every 10000

A fresh store gets 100 memories through `append_many` (a store given with --db is used as it
is; bench.scale builds large ones, searched in their "main" project), then `--searches` hybrid
searches over bench.scale's query mix (stored-like texts with two words dropped, fresh 5-15 and
20-30-word sentences; the model loads at the first of them) and 200 `recall` round trips. The
server's resident set is read as it goes: every `--every` searches, VmRSS and its parts
(anonymous memory: the heap, numpy and the model's buffers; file pages: the mapped libraries
and model), so a growth shows where it is.

Reading it: RSS in MB with the model loaded (target under 350, issue 37), its growth over the
searches (a flat line once warm: nothing accumulates), cold start to the `tools/list` answer,
and the `recall` round trip's p50 in ms (target under 3).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

EXE = Path(sys.executable).with_name("memstrata")


def memory_mb(pid: str) -> dict[str, float]:
    """VmHWM (peak), VmRSS (now) and its anonymous and file-backed parts, in MB."""
    wanted = {"VmHWM": "peak", "VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"}
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":")[0]
        if name in wanted:
            out[wanted[name]] = round(int(line.split()[1]) / 1024, 1)
    return out


def peak_rss_mb(pid: str) -> float:
    """VmHWM of a process, in MB."""
    return memory_mb(pid)["peak"]


def server_pids() -> list[str]:
    """Process ids of running `memstrata serve` processes of this venv."""
    found = subprocess.run(
        ["pgrep", "-f", f"{EXE} serve"], capture_output=True, text=True, check=False
    )
    return found.stdout.split()


def queries(n: int) -> list[str]:
    """`n` queries of bench.scale's mix (its synthetic corpus stands in for stored texts)."""
    from bench.scale import Corpus, Pool, query_texts
    from memory_core.embeddings.minilm_onnx import DIMS

    corpus = Corpus(seed=7)
    stored = corpus.sentences(np.random.default_rng(3), 2000)
    mix = query_texts(corpus, Pool(stored, np.zeros((0, DIMS), dtype=np.float32)), 1000)
    return [mix[i % len(mix)] for i in range(n)]


async def measure(
    db: Path, searches: int, every: int, fresh: bool, log: bool = True
) -> dict[str, float]:
    """Run the measurements against a server on `db`."""
    env = {**os.environ, "MEMSTRATA_DB": str(db), "MEMSTRATA_LOG_LEVEL": "WARNING"}
    if not fresh:
        env["MEMSTRATA_PROJECT"] = "main"
        env["MEMSTRATA_SCHEDULE__ENABLED"] = "false"
    params = StdioServerParameters(command=str(EXE), args=["serve"], env=env)
    starts = []
    for _ in range(5):
        begin = time.perf_counter()
        async with Client(stdio_client(params), read_timeout_seconds=120) as client:
            await client.list_tools()
            starts.append((time.perf_counter() - begin) * 1000)
    texts = queries(searches)
    curve: list[tuple[int, dict[str, float]]] = []
    async with Client(stdio_client(params), read_timeout_seconds=120) as client:
        if fresh:
            items = [
                {"layer": "episodic", "content": f"note {i} about deploys and the review {i * 7}"}
                for i in range(100)
            ]
            await client.call_tool("append_many", {"items": items})
        pid = max(await asyncio.to_thread(server_pids), key=int)
        taken = []
        for i, text in enumerate(texts, start=1):
            begin = time.perf_counter()
            await client.call_tool("search", {"query": text})
            taken.append((time.perf_counter() - begin) * 1000)
            if i % every == 0 or i == len(texts):
                curve.append((i, memory_mb(pid)))
                if log:
                    print(f"  {i} searches: {curve[-1]}", file=sys.stderr, flush=True)
        await client.call_tool("learn", {"key": "k", "value": "v"})
        trips = []
        for _ in range(200):
            begin = time.perf_counter()
            await client.call_tool("recall", {"key": "k"})
            trips.append((time.perf_counter() - begin) * 1000)
        last = memory_mb(pid)
    out = {
        "cold_start_ms_p50": statistics.median(starts),
        "recall_rtt_ms_p50": statistics.median(trips),
        "search_rtt_ms_p50": statistics.median(taken[len(taken) // 10 :]),
        "server_peak_rss_mb": last["peak"],
        "server_rss_mb_end": last["rss"],
        "server_anon_mb_end": last["anon"],
        "server_file_mb_end": last["file"],
    }
    if len(curve) > 1:
        # From the first reading (the model is loaded and warm by then) to the last.
        out["rss_growth_mb_after_first_reading"] = round(
            curve[-1][1]["rss"] - curve[0][1]["rss"], 1
        )
    return out


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, help="store to use (default: a fresh temporary one)")
    parser.add_argument("--searches", type=int, default=30, help="hybrid searches to make")
    parser.add_argument("--every", type=int, default=0, help="read RSS every N searches")
    args = parser.parse_args()
    every = args.every or max(args.searches, 1)
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(
            measure(args.db or Path(tmp) / "memory.db", args.searches, every, args.db is None)
        )
    sys.stdout.write(f"load average: {os.getloadavg()[0]:.2f}\n")
    for name, value in figures.items():
        sys.stdout.write(f"{name}: {value:.1f}\n")


if __name__ == "__main__":
    main()
