"""What preloading the model costs and buys: `memstrata serve` over stdio, preload on and off.

    .venv/bin/python bench/preload.py [--runs 7]

A store of 100 memories (one of them "Deployed v1.2 to staging") is built first. Then, for
each setting of MEMSTRATA_EMBEDDING_PRELOAD, `--runs` new processes each:
- a client that searches at once: time from process start to the `tools/list` answer, then
  to the answer of a first search by meaning ("release pushed to the test environment"),
  the mode it used and whether it found the event;
- a client that never searches: `tools/list`, then 3 s idle; the server's peak RSS (VmHWM)
  and CPU time (user + system) at that point.
A benchmark, not a test: the medians go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

EXE = Path(sys.executable).with_name("memstrata")
EVENT = "Deployed v1.2 to staging"
PARAPHRASE = "release pushed to the test environment"
IDLE_S = 3.0


def _server_pid() -> str:
    found = subprocess.run(
        ["pgrep", "-f", f"{EXE} serve"], capture_output=True, text=True, check=False
    )
    pids = found.stdout.split()
    if len(pids) != 1:
        raise RuntimeError(f"expected one server of {EXE}, found {pids}")
    return pids[0]


def _peak_rss_mb(pid: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def _cpu_s(pid: str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _params(db: Path, preload: str) -> StdioServerParameters:
    env = {
        **os.environ,
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_LOG_LEVEL": "WARNING",
        "MEMSTRATA_EMBEDDING_PRELOAD": preload,
    }
    return StdioServerParameters(command=str(EXE), args=["serve"], env=env)


async def _build(db: Path) -> None:
    async with Client(stdio_client(_params(db, "true"))) as client:
        items = [{"layer": "episodic", "content": EVENT}] + [
            {"layer": "episodic", "content": f"note {i} about the weekly review {i * 7}"}
            for i in range(99)
        ]
        await client.call_tool("append_many", {"items": items})


async def _searches_at_once(db: Path, preload: str) -> dict[str, Any]:
    begin = time.perf_counter()
    async with Client(stdio_client(_params(db, preload)), read_timeout_seconds=60) as client:
        await client.list_tools()
        listed = (time.perf_counter() - begin) * 1000
        result = await client.call_tool("search", {"query": PARAPHRASE, "limit": 3})
        searched = (time.perf_counter() - begin) * 1000
    found = result.structured_content or {}
    return {
        "tools_list_ms": listed,
        "first_search_ms": searched,
        "mode": found.get("mode"),
        "found": any(h["content"] == EVENT for h in found.get("hits", [])),
    }


async def _never_searches(db: Path, preload: str) -> dict[str, float]:
    async with Client(stdio_client(_params(db, preload))) as client:
        await client.list_tools()
        await asyncio.sleep(IDLE_S)
        pid = await asyncio.to_thread(_server_pid)
        return {"idle_peak_rss_mb": _peak_rss_mb(pid), "idle_cpu_s": _cpu_s(pid)}


async def measure(db: Path, runs: int) -> dict[str, dict[str, Any]]:
    """Medians per preload setting."""
    await _build(db)
    out: dict[str, dict[str, Any]] = {}
    for preload in ("false", "true"):
        at_once = [await _searches_at_once(db, preload) for _ in range(runs)]
        idle = [await _never_searches(db, preload) for _ in range(runs)]
        out[preload] = {
            "tools_list_ms_p50": statistics.median(r["tools_list_ms"] for r in at_once),
            "first_search_ms_p50": statistics.median(r["first_search_ms"] for r in at_once),
            "first_search_modes": sorted({str(r["mode"]) for r in at_once}),
            "first_search_found": sum(r["found"] for r in at_once),
            "runs": runs,
            "idle_peak_rss_mb_p50": statistics.median(r["idle_peak_rss_mb"] for r in idle),
            "idle_cpu_s_p50": statistics.median(r["idle_cpu_s"] for r in idle),
        }
        sys.stderr.write(f"preload={preload}: {json.dumps(out[preload])}\n")
    return out


def main() -> None:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(Path(tmp) / "memory.db", args.runs))
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
