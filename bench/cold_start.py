"""Cold processes, old code against new, interleaved (a benchmark, not a test).

    python -m bench.cold_start --exe base=/work/wt-perf-base/.venv/bin --exe new=.venv/bin
    python -m bench.cold_start --exe new=.venv/bin --runs 20 --json bench/results/cold.json

Each `--exe LABEL=BIN` names a virtualenv's bin directory (a checkout installed with
`make dev`). For every label, one round runs, in turn, a fresh process of:
- `python -c "import mcp.server"`: the SDK's own import time, the floor of `serve`;
- `memstrata serve` until the answer to `tools/list` over stdio (the MCP client in this
  process, as bench/latency.py measures it);
- `memstrata stats` on a 10k-memory store (no embeddings: stats never reads vectors);
- `memstrata hook session-start` (a new session, the context is built) on the same store.
Rounds alternate between the labels, so a loaded machine slows both alike; the figures are the
median and range (min-max) of `--runs` rounds, as wall time and as the CPU time (user + system)
of the child process, which a machine shared with other work distorts far less (for `serve`,
also its CPU time until the `tools/list` answer arrived, read from /proc: the server's life
includes whatever it starts after answering). Each label
gets its own copy of the store, migrated by its own code before timing (a newer schema is
refused by older code).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from bench.latency import sentence

PROJECT = "shop-api"
_BUILD = """
import asyncio, json, sys
from pathlib import Path
from bench.store import open_bench_store
from memory_core.domain.models import Layer
from memory_core.services.memories import AppendItem

async def build(db, texts):
    items = [AppendItem(layer=Layer.EPISODIC, content=t) for t in texts]
    items[:200] = [AppendItem(layer=Layer.SEMANTIC, key=f"fact.{i}", content=t)
                   for i, t in enumerate(texts[:200])]
    async with open_bench_store(Path(db), model="none") as store:
        for start in range(0, len(items), 1000):
            await store.memories.append_many(sys.argv[2], items[start:start + 1000])

asyncio.run(build(sys.argv[1], json.loads(sys.stdin.read())))
"""


def _env(db: Path) -> dict[str, str]:
    return {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_LOG_LEVEL": "WARNING",
        "MEMSTRATA_PROJECT": PROJECT,
        "PATH": os.environ["PATH"],
    }


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _timed(
    args: list[str], env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> tuple[float, float]:
    """(wall ms, CPU ms of the child): CPU time is what a loaded machine distorts least."""
    cpu, tick = _children_cpu_ms(), time.perf_counter()
    subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, check=True)
    return (time.perf_counter() - tick) * 1000, _children_cpu_ms() - cpu


def _live_children_cpu_ms() -> dict[int, float]:
    """CPU ms (user + system) so far of each running child process (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[int(pid)] = (int(fields[11]) + int(fields[12])) * 1000 / tick
    return out


async def _tools_list(bin_dir: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall ms to the tools/list answer, CPU ms of the server up to it and over its life).

    The CPU time up to the answer is what a loaded machine distorts least: the server's
    critical path is one thread, so on a quiet machine its wall time is about that CPU time.
    """
    params = StdioServerParameters(command=str(bin_dir / "memstrata"), args=["serve"], env=env)
    cpu, tick = _children_cpu_ms(), time.perf_counter()
    before = _live_children_cpu_ms()
    async with Client(params) as client:
        await client.list_tools()
        wall = (time.perf_counter() - tick) * 1000
        at_answer = sum(v for k, v in _live_children_cpu_ms().items() if k not in before)
    return wall, at_answer, _children_cpu_ms() - cpu


def _serve_timings(figures: tuple[float, float, float]) -> tuple[float, float, float]:
    """(wall, CPU over the server's life, CPU until the answer), the order the table uses."""
    wall, at_answer, life = figures
    return wall, life, at_answer


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(samples), 1),
        "min": round(min(samples), 1),
        "max": round(max(samples), 1),
        "n": len(samples),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--exe", action="append", required=True, help="LABEL=venv bin dir")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    bins = {k: Path(v).resolve() for k, v in (e.split("=", 1) for e in args.exe)}
    work = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    rng = random.Random(7)
    texts = [f"{i} {sentence(rng)}" for i in range(args.size)]
    first = next(iter(bins.values()))
    template = work / "template.db"
    # Built by the first label's code (the oldest schema), then copied for each label.
    subprocess.run(
        [str(first / "python"), "-c", _BUILD, str(template), PROJECT],
        input=json.dumps(texts),
        text=True,
        check=True,
        cwd=Path(first).parents[1],
    )
    dbs: dict[str, Path] = {}
    for label, bin_dir in bins.items():
        dbs[label] = work / f"{label}.db"
        shutil.copyfile(template, dbs[label])
        subprocess.run([str(bin_dir / "memstrata"), "migrate"], env=_env(dbs[label]), check=True)
    repo = work / PROJECT
    repo.mkdir()
    payload = {"cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    figures: dict[str, dict[str, list[float]]] = {label: {} for label in bins}
    for n in range(args.runs):
        for label, bin_dir in bins.items():
            env = _env(dbs[label])
            hook = {**payload, "session_id": f"{label}-{n}"}
            timings = {
                "import mcp.server": _timed(
                    [str(bin_dir / "python"), "-c", "import mcp.server"], env
                ),
                "serve to tools/list": _serve_timings(asyncio.run(_tools_list(bin_dir, env))),
                "stats": _timed([str(bin_dir / "memstrata"), "stats"], env),
                "hook session-start": _timed(
                    [str(bin_dir / "memstrata"), "hook", "session-start"],
                    env,
                    json.dumps(hook),
                    repo,
                ),
            }
            answer_cpu = timings["serve to tools/list"][2]
            figures[label].setdefault("serve to tools/list cpu until the answer", []).append(
                answer_cpu
            )
            for name, (wall, cpu, *_) in timings.items():
                figures[label].setdefault(f"{name} wall", []).append(wall)
                figures[label].setdefault(f"{name} cpu", []).append(cpu)
        print(f"round {n + 1}/{args.runs}", file=sys.stderr, flush=True)
    results: dict[str, Any] = {
        "command": " ".join(["python -m bench.cold_start", *sys.argv[1:]]),
        "load_average_at_end": os.getloadavg(),
        "figures": {
            label: {name: _summary(s) for name, s in row.items()} for label, row in figures.items()
        },
    }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
