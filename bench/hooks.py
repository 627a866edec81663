"""Cold-process latency of the Claude Code hooks on a 10k-memory store (a benchmark, not a test).

    python -m bench.hooks                       # 10,000 memories, 20 runs per figure
    python -m bench.hooks --size 10000 --runs 30 --json bench/results/hooks.json
    python -m bench.hooks --runs 30 --against /tmp/before   # session-start: this code vs other
    python -m bench.hooks --warm --runs 30     # user-prompt-submit with a `memstrata serve` up

`--against DIR` times session-start only, with this checkout's code and with the `server`,
`memory_core` and `migrations` folders of DIR first on PYTHONPATH (e.g. `git archive OLD
server memory_core migrations | tar -x -C DIR`), interleaved run by run on the same store,
so both see the same load on a shared machine; it reports both medians and their ratio.

Each figure is the wall time of `memstrata hook <event>` as Claude Code runs it: a new process
(the installed console script), the payload on stdin, until the process has exited, model load
included where the hook loads one. Measured:
- session-start on a new session (the context is built) and on `resume` (the cached text);
- user-prompt-submit with the default keyword search, and with
  MEMSTRATA_HOOKS__PROMPT_SEMANTIC_WAIT=3 (the ONNX model is loaded in the process and the
  search is hybrid), on prompts of 6-30 words;
- `python -c pass` with the same interpreter, the floor of any hook;
- the injected sizes: characters, and tokens by the all-MiniLM-L6-v2 tokenizer.
`--warm` times user-prompt-submit with a `memstrata serve` (stdio, its stdin held open as
Claude Code holds it) up on the same store with its model loaded: the hook asks it over the
per-user socket (server.hooks.warm) and it answers with hybrid search; interleaved run by run
with the same hook with MEMSTRATA_HOOKS__WARM=false (its own keyword search) and with no
server to ask (its socket directory empty: the failed connect, then the keyword search). It
also reports the warm client's own import cost (`python -X importtime`).
The store: 10k memories of the four layers (episodic sentences, semantic facts, procedural
rules, working notes), embedded with the default model; the working directory is a small git
repository with a few changed files, so the screen context runs `git status` as it would.

Reading it: p50 / p95 ms per hook process against its target (session-start under 300 ms,
user-prompt-submit under 700 ms), `python -c pass` as the floor of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import structlog

from bench.latency import sentence, summary
from bench.store import open_bench_store
from memory_core.domain.models import Layer
from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from memory_core.services.memories import AppendItem

PROJECT = "shop-api"


async def build_store(db: Path, size: int, rng: random.Random) -> float:
    """`size` memories of project PROJECT, embedded; returns the seconds it took."""
    started = time.perf_counter()
    rules, facts, notes = 50, 200, 50
    items = [
        AppendItem(layer=Layer.PROCEDURAL, key=f"when {sentence(rng)[:60]}", content=sentence(rng))
        for _ in range(rules)
    ]
    items += [
        AppendItem(layer=Layer.SEMANTIC, key=f"fact.{i}", content=sentence(rng))
        for i in range(facts)
    ]
    items += [
        AppendItem(layer=Layer.WORKING, content=sentence(rng), session_id="bench")
        for _ in range(notes)
    ]
    items += [
        AppendItem(layer=Layer.EPISODIC, content=f"{i} {sentence(rng)}")
        for i in range(size - len(items))
    ]
    async with open_bench_store(db, model="default") as store:
        for start in range(0, len(items), 500):
            await store.memories.append_many(PROJECT, items[start : start + 500])
    return time.perf_counter() - started


def git_workdir(root: Path) -> Path:
    repo = root / PROJECT
    (repo / "src").mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"],):
        subprocess.run(["git", *args], cwd=repo, check=True)
    for name in ("README.md", "src/app.py", "src/billing.py"):
        (repo / name).write_text("x\n")
    return repo


def run_hook(
    event: str, payload: dict[str, Any], env: dict[str, str], cwd: Path
) -> tuple[float, str]:
    exe = Path(sys.executable).parent / "memstrata"
    tick = time.perf_counter()
    done = subprocess.run(
        [str(exe), "hook", event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=True,
    )
    elapsed = (time.perf_counter() - tick) * 1000
    if done.stderr:
        raise RuntimeError(f"{event} wrote to stderr: {done.stderr}")
    context = ""
    if done.stdout:
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return elapsed, context


def python_pass_ms() -> float:
    """Wall time of `python -c pass` with this interpreter: the floor of any hook."""
    tick = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - tick) * 1000


def sizes(texts: list[str]) -> dict[str, Any]:
    counter = WordPieceTokenCounter()
    chars = [len(t) for t in texts if t]
    tokens = [counter.count(t) for t in texts if t]
    return {
        "injected": len(chars),
        "of": len(texts),
        "chars_p50": statistics.median(chars) if chars else 0,
        "chars_max": max(chars, default=0),
        "tokens_p50": statistics.median(tokens) if tokens else 0,
        "tokens_max": max(tokens, default=0),
    }


def measure(db: Path, repo: Path, runs: int, rng: random.Random) -> dict[str, Any]:
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo.parent),
    }
    out: dict[str, Any] = {"python_pass_ms": summary([python_pass_ms() for _ in range(runs)])}

    def base(event: str, sid: str) -> dict[str, Any]:
        return {
            "session_id": sid,
            "transcript_path": "",
            "cwd": str(repo),
            "hook_event_name": event,
        }

    run_hook("session-start", base("SessionStart", "warm-up") | {"source": "startup"}, env, repo)
    sessions, times, texts = [], [], []
    for _ in range(runs):
        sid = str(uuid.uuid4())
        ms, text = run_hook(
            "session-start", base("SessionStart", sid) | {"source": "startup"}, env, repo
        )
        sessions.append(sid)
        times.append(ms)
        texts.append(text)
    out["session_start_ms"] = summary(times)
    out["session_start_size"] = sizes(texts)
    times = [
        run_hook("session-start", base("SessionStart", sid) | {"source": "resume"}, env, repo)[0]
        for sid in sessions
    ]
    out["session_resume_ms"] = summary(times)
    for label, extra in (
        ("prompt_keyword", {}),
        ("prompt_semantic", {"MEMSTRATA_HOOKS__PROMPT_SEMANTIC_WAIT": "3"}),
    ):
        times, texts = [], []
        for sid in sessions:
            payload = base("UserPromptSubmit", sid) | {"prompt": sentence(rng)}
            ms, text = run_hook("user-prompt-submit", payload, env | extra, repo)
            times.append(ms)
            texts.append(text)
        out[f"{label}_ms"] = summary(times)
        out[f"{label}_size"] = sizes(texts)
    return out


def start_server(env: dict[str, str], repo: Path, log: Path) -> subprocess.Popen[bytes]:
    """`memstrata serve` over stdio, its stdin left open; returns once it listens for hooks
    with its model loaded (read from its log)."""
    exe = Path(sys.executable).parent / "memstrata"
    with log.open("wb") as errors:
        proc = subprocess.Popen(
            [str(exe), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=env | {"MEMSTRATA_LOG_LEVEL": "DEBUG"},  # hooks.answered: its time per answer
            cwd=repo,
        )
    wanted = {"hooks.listening", "embedder.ready"}
    stop = time.monotonic() + 120
    while not wanted <= {
        json.loads(line).get("event") for line in log.read_text().splitlines() if line[:1] == "{"
    }:
        if proc.poll() is not None or time.monotonic() > stop:
            proc.kill()
            raise RuntimeError(f"the server did not get ready: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc


def client_import_ms() -> dict[str, float]:
    """Import times (cumulative, ms) in a fresh process, as the warm hook imports them.

    `hook_path`: the console script's module, the hook entry and the warm client together
    (everything the warm hook imports); `warm_client`: what server.hooks.warm adds to them.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import server.cli, server.hooks.entry; import server.hooks.warm",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    own = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        # Top-level imports only (nested ones are indented), past the header line.
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            own[parts[2].strip()] = int(parts[1]) / 1000
    hook = ("server.cli", "server.hooks.entry", "server.hooks.warm")
    return {"hook_path": sum(own.get(m, 0.0) for m in hook), "warm_client": own[hook[-1]]}


def measure_warm(db: Path, repo: Path, runs: int, rng: random.Random) -> dict[str, Any]:
    """user-prompt-submit with a warm server, with warm off, and with no server, interleaved;
    pre-tool-use on a `git commit` with the server and without, in the same rounds."""
    runtime = Path(tempfile.mkdtemp(prefix="msb"))  # short: a socket path's limit is ~100 B
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo.parent),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    # No server, as the hook sees it: a private socket directory where nobody listens.
    nobody = Path(tempfile.mkdtemp(prefix="msb"))
    (nobody / "memstrata").mkdir(mode=0o700)
    sides = {
        "prompt_warm": env,
        "prompt_direct_server_up": env | {"MEMSTRATA_HOOKS__WARM": "false"},
        "prompt_no_server": env | {"XDG_RUNTIME_DIR": str(nobody)},
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    texts: dict[str, list[str]] = {name: [] for name in sides}

    def prompt(name: str) -> None:
        payload = {
            "session_id": str(uuid.uuid4()),
            "transcript_path": "",
            "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": sentence(rng),
        }
        ms, text = run_hook("user-prompt-submit", payload, sides[name], repo)
        times[name].append(ms)
        texts[name].append(text)

    tool_sides = {"tool_warm": env, "tool_no_server": sides["prompt_no_server"]}
    for name in tool_sides:
        times[name], texts[name] = [], []

    def tool_call(name: str) -> None:
        payload = {
            "session_id": str(uuid.uuid4()),
            "transcript_path": "",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"git commit -m '{sentence(rng)}'"},
        }
        ms, text = run_hook("pre-tool-use", payload, tool_sides[name], repo)
        times[name].append(ms)
        texts[name].append(text)

    log = runtime.parent / f"{runtime.name}-serve.log"
    server = start_server(env, repo, log)
    try:
        warm_up = {"session_id": "w", "prompt": "warm up the paths " * 2}
        for side_env in sides.values():  # the file cache and the server's first search
            run_hook("user-prompt-submit", warm_up, side_env, repo)
        order = list(sides)
        floor = []
        for i in range(runs):  # each side first, second and last in turn
            for name in order[i % 3 :] + order[: i % 3]:
                prompt(name)
            for name in list(tool_sides)[i % 2 :] + list(tool_sides)[: i % 2]:
                tool_call(name)
            floor.append(python_pass_ms())
    finally:
        assert server.stdin is not None
        server.stdin.close()  # a clean shutdown, as at a session's end
        server.wait(timeout=60)
    out: dict[str, Any] = {f"{name}_ms": summary(samples) for name, samples in times.items()}
    out |= {f"{name}_size": sizes(samples) for name, samples in texts.items()}
    out["python_pass_ms"] = summary(floor)
    # The server's own time per prompt (from reading the request to its answer), warm-up not
    # counted: the rest of prompt_warm is the hook process and the socket.
    answered = [
        record["ms"]
        for line in log.read_text().splitlines()
        if line[:1] == "{"
        and (record := json.loads(line)).get("event") == "hooks.answered"
        and record.get("op") == "user-prompt-submit"
    ]
    out["server_answer_ms"] = summary(answered[1:])
    imports = [client_import_ms() for _ in range(5)]
    for name in ("hook_path", "warm_client"):
        out[f"{name}_import_ms"] = round(statistics.median(i[name] for i in imports), 2)
    return out


def compare(db: Path, repo: Path, runs: int, other: Path) -> dict[str, Any]:
    """Session-start (new session, then resume) of this code and of `other`, interleaved."""
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo.parent),
    }
    sides = {"this": env, "other": env | {"PYTHONPATH": str(other)}}

    def payload(sid: str, source: str) -> dict[str, Any]:
        return {
            "session_id": sid,
            "transcript_path": "",
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "source": source,
        }

    times: dict[str, list[float]] = {f"{s}_{k}": [] for s in sides for k in ("start", "resume")}
    texts: dict[str, str] = {}
    for side, side_env in sides.items():  # warm the file cache for both
        run_hook("session-start", payload(f"warm-{side}", "startup"), side_env, repo)
    for i in range(runs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for side in order:
            sid = str(uuid.uuid4())
            ms, text = run_hook("session-start", payload(sid, "startup"), sides[side], repo)
            times[f"{side}_start"].append(ms)
            texts[side] = text
            ms, _ = run_hook("session-start", payload(sid, "resume"), sides[side], repo)
            times[f"{side}_resume"].append(ms)
    out: dict[str, Any] = {"against": str(other), "runs": runs}
    out |= {f"{name}_ms": summary(samples) for name, samples in times.items()}
    for kind in ("start", "resume"):
        out[f"ratio_{kind}"] = round(
            out[f"this_{kind}_ms"]["p50"] / out[f"other_{kind}_ms"]["p50"], 3
        )
    # The same store, the same code path: the texts differ only in their git screen lines.
    out["same_chars"] = len(texts["this"]) == len(texts["other"])
    return out


def warm_markdown(results: dict[str, Any]) -> str:
    rows = [
        "| user-prompt-submit (process included) | p50 ms | p95 ms | runs with output |",
        "|---|---|---|---|",
    ]
    for name, label in (
        ("prompt_warm", "warm server up: asked over the socket, hybrid search"),
        ("prompt_direct_server_up", "server up, MEMSTRATA_HOOKS__WARM=false: own keyword search"),
        ("prompt_no_server", "no server: failed connect, then own keyword search"),
    ):
        f, s = results[f"{name}_ms"], results[f"{name}_size"]
        rows.append(f"| {label} | {f['p50']:.0f} | {f['p95']:.0f} | {s['injected']}/{s['of']} |")
    for name, label in (
        ("tool_warm", "pre-tool-use (Bash git commit), warm server up"),
        ("tool_no_server", "pre-tool-use (Bash git commit), no server: own rule matching"),
    ):
        if f"{name}_ms" in results:
            f, s = results[f"{name}_ms"], results[f"{name}_size"]
            rows.append(
                f"| {label} | {f['p50']:.0f} | {f['p95']:.0f} | {s['injected']}/{s['of']} |"
            )
    f = results["python_pass_ms"]
    rows.append(f"| `python -c pass` (the floor of any hook) | {f['p50']:.0f} | {f['p95']:.0f} | |")
    f = results["server_answer_ms"]
    rows.append(f"| the warm server's own time per answer | {f['p50']:.0f} | {f['p95']:.0f} | |")
    rows.append(
        f"\nimports of the warm hook (server.cli, server.hooks.entry, server.hooks.warm): "
        f"{results['hook_path_import_ms']} ms, of which the warm client adds "
        f"{results['warm_client_import_ms']} ms"
    )
    return "\n".join(rows)


def markdown(results: dict[str, Any]) -> str:
    def cell(name: str) -> str:
        f = results[name]
        return f"{f['p50']:.0f} | {f['p95']:.0f}"

    rows = [
        "| hook (cold process) | p50 ms | p95 ms |",
        "|---|---|---|",
        f"| `python -c pass` (floor) | {cell('python_pass_ms')} |",
        f"| session-start, new session (context built) | {cell('session_start_ms')} |",
        f"| session-start, resume (cached text) | {cell('session_resume_ms')} |",
        f"| user-prompt-submit, keyword (default) | {cell('prompt_keyword_ms')} |",
        f"| user-prompt-submit, model loaded (semantic wait 3 s) | {cell('prompt_semantic_ms')} |",
        "",
        "| injected | runs with output | chars p50 / max | tokens p50 / max |",
        "|---|---|---|---|",
    ]
    for name in ("session_start_size", "prompt_keyword_size", "prompt_semantic_size"):
        s = results[name]
        rows.append(
            f"| {name.removesuffix('_size')} | {s['injected']}/{s['of']} | "
            f"{s['chars_p50']:.0f} / {s['chars_max']} | {s['tokens_p50']:.0f} / {s['tokens_max']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--against", type=Path, help="compare session-start with the code in this directory"
    )
    parser.add_argument(
        "--warm", action="store_true", help="time the prompt hook with a `memstrata serve` up"
    )
    parser.add_argument(
        "--keep", type=Path, help="build the store in this directory once and reuse it after"
    )
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rng = random.Random(11)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    db = root / "memory.db"
    repo = root / PROJECT
    built = 0.0
    if not (args.keep and db.exists() and repo.exists()):
        root.mkdir(parents=True, exist_ok=True)
        built = asyncio.run(build_store(db, args.size, rng))
        repo = git_workdir(root)
    results = {"size": args.size, "runs": args.runs, "build_s": round(built, 1)}
    if args.against:
        results |= compare(db, repo, args.runs, args.against.resolve())
        print(json.dumps(results, indent=2))
    elif args.warm:
        results |= measure_warm(db, repo, args.runs, rng)
        print(json.dumps(results, indent=2))
        print(warm_markdown(results))
    else:
        results |= measure(db, repo, args.runs, rng)
        print(json.dumps(results, indent=2))
        print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
