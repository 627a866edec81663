"""Cold start, recall round trip and peak RSS of a real `memstrata serve` over stdio.

    python -m bench.server_rss [--db PATH]

A fresh store gets 100 memories through `append_many`, then 30 hybrid searches (the model
loads at the first of them) and 200 `recall` round trips; the server's own peak RSS (VmHWM of
its process) is read at the end.

Reading it: peak RSS in MB with the model loaded (target under 350), cold start to the
`tools/list` answer, and the `recall` round trip's p50 in ms (target under 3).
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

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

EXE = Path(sys.executable).with_name("memstrata")


def peak_rss_mb(pid: str) -> float:
    """VmHWM of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def server_pids() -> list[str]:
    """Process ids of running `memstrata serve` processes of this venv."""
    found = subprocess.run(
        ["pgrep", "-f", f"{EXE} serve"], capture_output=True, text=True, check=False
    )
    return found.stdout.split()


async def measure(db: Path) -> dict[str, float]:
    """Run the measurements against a server on `db`."""
    env = {**os.environ, "MEMSTRATA_DB": str(db), "MEMSTRATA_LOG_LEVEL": "WARNING"}
    params = StdioServerParameters(command=str(EXE), args=["serve"], env=env)
    starts = []
    for _ in range(5):
        begin = time.perf_counter()
        async with Client(stdio_client(params)) as client:
            await client.list_tools()
            starts.append((time.perf_counter() - begin) * 1000)
    async with Client(stdio_client(params)) as client:
        items = [
            {"layer": "episodic", "content": f"note {i} about deploys and the review {i * 7}"}
            for i in range(100)
        ]
        await client.call_tool("append_many", {"items": items})
        for i in range(30):
            await client.call_tool("search", {"query": f"quarterly review {i}"})
        await client.call_tool("learn", {"key": "k", "value": "v"})
        trips = []
        for _ in range(200):
            begin = time.perf_counter()
            await client.call_tool("recall", {"key": "k"})
            trips.append((time.perf_counter() - begin) * 1000)
        rss = max(peak_rss_mb(pid) for pid in await asyncio.to_thread(server_pids))
    return {
        "cold_start_ms_p50": statistics.median(starts),
        "recall_rtt_ms_p50": statistics.median(trips),
        "server_peak_rss_mb": rss,
    }


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, help="store to use (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(args.db or Path(tmp) / "memory.db"))
    for name, value in figures.items():
        sys.stdout.write(f"{name}: {value:.1f}\n")


if __name__ == "__main__":
    main()
