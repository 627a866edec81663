"""How soon `memstrata serve` answers a client's opening, and what Claude Code waits (a benchmark).

    python -m bench.serve_start --runs 10
    python -m bench.serve_start --runs 10 --claude 5 --json bench/results/serve_start.json

Part one spawns `memstrata serve` over raw pipes, sends an opening and times, from the spawn,
each answer: Claude Code 2.1.332's opening (`server/discover`, `subscriptions/listen`, the
prompt, resource and tool lists, with the 2026-07-28 envelope) and a handshake client's
(`initialize`, `notifications/initialized`, `tools/list`). Each round runs both with the
answers recorded by an earlier start (`early`: the answer cache warmed once before timing) and
without (`sdk`: an empty cache each time, so the SDK answers once imported, as before issue 31),
beside `python -c "import mcp.server"`, the SDK's own import.

`--claude N` then runs the real Claude Code CLI (tests/claude_cli.py: `claude -p` against a
stub model on 127.0.0.1, a temporary HOME) N times in each of three ways, interleaved: without
memstrata, with the plugin and its answers recorded (one warm-up session first), and with the
plugin and an empty answer cache; the figure is the time from launching `claude` to its first
model request. The load average is printed with the figures: on a shared machine compare only
figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cold_start import _summary  # the same p50/min/max/n figures

_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
_LISTEN = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


def _rpc(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


# (label, messages, {answer label: id or subscription the answer carries}).
OPENINGS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "claude-code": (
        [
            _rpc("probe", "server/discover", {"_meta": _ENVELOPE}),
            _rpc(
                "listen:0", "subscriptions/listen", {"_meta": _ENVELOPE, "notifications": _LISTEN}
            ),
            _rpc(1, "prompts/list", {"_meta": _ENVELOPE}),
            _rpc(2, "resources/list", {"_meta": _ENVELOPE}),
            _rpc(3, "tools/list", {"_meta": _ENVELOPE}),
        ],
        {"discover": "probe", "all five": 3},
    ),
    "handshake": (
        [
            _rpc(
                0,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            ),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _rpc(1, "tools/list"),
        ],
        {"initialize": 0, "tools/list": 1},
    ),
}


def _env(db: Path, cache: Path) -> dict[str, str]:
    return {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "XDG_CACHE_HOME": str(cache),
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/"),
    }


def time_opening(exe: Path, env: dict[str, str], opening: str) -> dict[str, float]:
    """ms from spawning `memstrata serve` to each answer named in OPENINGS[opening]."""
    messages, wanted = OPENINGS[opening]
    pending = {ident: label for label, ident in wanted.items()}
    expected = len([m for m in messages if "id" in m])  # the listen's first frame: its ack
    got: dict[str, float] = {}
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(exe), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()
    for seen, line in enumerate(process.stdout, start=1):
        at = (time.perf_counter() - start) * 1000
        message = json.loads(line)
        label = pending.pop(message.get("id"), None)
        if label is not None:
            got[label] = at
        if seen >= expected and not pending:
            break
    process.stdin.close()
    process.stdout.close()
    assert process.stderr is not None
    err = process.stderr.read()
    process.stderr.close()
    process.wait(timeout=60)
    missing = set(pending.values())
    if missing:
        raise RuntimeError(f"serve never answered {sorted(missing)}: {err.decode()[-2000:]}")
    return got


def _import_ms(python: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(python), "-c", "import mcp.server"], check=True)
    return (time.perf_counter() - start) * 1000


def bench_openings(bin_dir: Path, runs: int, work: Path) -> dict[str, dict[str, float]]:
    exe = bin_dir / "memstrata"
    db = work / "memory.db"
    subprocess.run([str(exe), "migrate"], env=_env(db, work / "unused"), check=True)
    warm = work / "warm-cache"
    for opening in OPENINGS:  # record the answers the `early` runs find
        time_opening(exe, _env(db, warm), opening)
    samples: dict[str, list[float]] = {}
    for n in range(runs):
        samples.setdefault("import mcp.server", []).append(_import_ms(bin_dir / "python"))
        for opening in OPENINGS:
            for mode in ("early", "sdk"):
                cache = warm if mode == "early" else work / f"cold-{n}-{opening}"
                for label, ms in time_opening(exe, _env(db, cache), opening).items():
                    samples.setdefault(f"{opening} {mode}: {label}", []).append(ms)
        print(f"round {n + 1}/{runs}", file=sys.stderr, flush=True)
    return {name: _summary(values) for name, values in samples.items()}


def bench_claude(runs: int, work: Path) -> dict[str, dict[str, float]]:
    """ms from launching `claude -p` to its first model request (module docstring)."""
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo))
    from tests.claude_cli import ClaudeWorkspace, StubModel, StubServer

    samples: dict[str, list[float]] = {}
    with StubServer(StubModel()) as model:
        ws = ClaudeWorkspace.create(work / "claude", model)
        warm = str(work / "claude-cache")
        ws.env["XDG_CACHE_HOME"] = warm
        ws.run("warm up")

        def first_request(plugin: bool, cache: str) -> float:
            ws.env["XDG_CACHE_HOME"] = cache
            before = len(model.conversation())
            start = time.monotonic()
            done = ws.run("hello", plugin=plugin)
            if done.returncode != 0:
                raise RuntimeError(f"claude failed: {done.stderr[-2000:]}")
            return (model.conversation()[before].arrived - start) * 1000

        ways: dict[str, Callable[[int], float]] = {
            "without memstrata": lambda n: first_request(False, warm),
            "plugin, answers recorded": lambda n: first_request(True, warm),
            "plugin, empty answer cache": lambda n: first_request(True, f"{warm}-cold-{n}"),
        }
        for n in range(runs):
            for name, way in ways.items():
                samples.setdefault(name, []).append(way(n))
            print(f"claude round {n + 1}/{runs}", file=sys.stderr, flush=True)
    return {name: _summary(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--claude", type=int, default=0, metavar="N", help="CLI runs per way")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-serve-start-"))
    load: list[Any] = [os.getloadavg()]
    results: dict[str, Any] = {"command": " ".join(["python -m bench.serve_start", *sys.argv[1:]])}
    try:
        results["serve opening ms"] = bench_openings(args.bin.resolve(), args.runs, work)
        load.append(os.getloadavg())
        if args.claude:
            results["claude first request ms"] = bench_claude(args.claude, work)
            load.append(os.getloadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_average"] = load
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
