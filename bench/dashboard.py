"""How long each dashboard page takes at 100k memories (a benchmark, not a test).

    python -m bench.dashboard --size 100000 --repeats 20 --runs 3
    python -m bench.dashboard --vectors --db /tmp/dash-vec.db   # with MiniLM vectors

Builds a store of `size` memories spread over the last 60 days, so every tier is populated and
about 40 % are EXPIRED (the forgetting page lists them), plus 20 conversation sessions. By
default keyword-only (model "none"). With `--vectors` every memory also gets a MiniLM vector
(a pool of 400 texts embedded by the real model, each stored row's vector a pool vector plus
noise, as bench.scale does: 100k real embeddings would take half an hour) and the server runs
with the real model, so the overview counts vectors and the search page runs hybrid too.
Then it starts a real `memstrata serve --http` with a bearer token on it and times each page
over loopback (request sent to last byte received, so an upper bound of the server's time),
after warm-up requests; prints the median and p90 per page in milliseconds, for each of
`--runs` runs (a fresh server each) with the load average before it, then the median of the
runs' medians.

Reading it: every page's median should stay under 100 ms at 100k memories on a quiet machine
(issue 37); a loaded machine raises every figure, so quote the load beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memory_core.config.policies import Limits
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.models import Layer
from memory_core.embeddings import LazyEmbedder
from memory_core.services import maintenance
from memory_core.services.memories import AppendItem
from server.container import open_container
from server.settings import ScheduleSettings, Settings

TOKEN = "bench-dashboard-token-0123456789"
PROJECT = "bench"
# A Zipf-distributed vocabulary of 1,600 made-up words, so keyword search meets common and
# rare words as in real text (a small vocabulary would make every row match every query).
_SYLLABLES = [a + b for a in "klmnstrvpd" for b in "aeiou"][:30]
WORDS = [a + b + c for a in _SYLLABLES[:10] for b in _SYLLABLES for c in _SYLLABLES[:16] if a != b][
    :1600
]
WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]
LAYERS = [Layer.EPISODIC] * 5 + [Layer.WORKING] * 2 + [Layer.SEMANTIC] * 2 + [Layer.PROCEDURAL]
POOL = 400  # distinct texts the real model embeds for --vectors
SIGMA = 0.015  # noise per dimension around a pool vector (bench.scale's)
# A sentence-length query, as models write them (issue 37): hybrid cost grows with words.
SENTENCE = " ".join(WORDS[i] for i in (3, 40, 77, 150, 230, 400, 610, 900, 1200, 1500))


class MovingClock:
    """A clock the builder sets before each batch (rows are dated across 60 days)."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def _item(rng: random.Random, n: int) -> AppendItem:
    layer = rng.choice(LAYERS)
    text = " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(8, 30))) + f" #{n}"
    key = f"key.{n}" if layer in (Layer.SEMANTIC, Layer.PROCEDURAL) else None
    session = f"s{n % 50}" if layer is Layer.WORKING else None
    return AppendItem(layer=layer, content=text, key=key, session_id=session)


async def build(db: Path, size: int, vectors: bool = False) -> None:
    """`size` memories over the last 60 days, oldest first, and 20 sessions.

    `vectors`: each memory gets a MiniLM-like vector (see the module's docstring).
    """
    rng = random.Random(size)
    now = datetime.now(UTC)
    clock = MovingClock(now - timedelta(days=60))
    settings = Settings(
        db=db,
        embedding_model="default" if vectors else "none",
        embedding_preload=False,
        schedule=ScheduleSettings(enabled=False),
        project=PROJECT,
        # Every appended row is kept (the default cap trims each session's working rows).
        limits=Limits(working_cap=size),
    )
    batch = 1000
    pooled = lazy = pool = None
    if vectors:
        from bench.scale import PoolEmbedder, embedded_text
        from memory_core.embeddings.minilm_onnx import DIMS, MODEL_ID, MiniLMOnnxEmbedder

        real = MiniLMOnnxEmbedder()
        pool = real.embed([_item(rng, -1).content for _ in range(POOL)])
        pooled = PoolEmbedder(real)
        lazy = LazyEmbedder(lambda: pooled, model_id=MODEL_ID, dims=DIMS)
    noise = np.random.default_rng(size)
    async with open_container(settings, clock, embedder=lazy) as store:
        if lazy is not None:
            await lazy.wait()
        for start in range(0, size, batch):
            clock.at = now - timedelta(days=60) + timedelta(days=60) * start / size
            items = [_item(rng, n) for n in range(start, min(size, start + batch))]
            if pooled is not None and pool is not None:
                picked = pool[noise.integers(0, POOL, len(items))]
                picked = picked + noise.standard_normal(picked.shape).astype(np.float32) * SIGMA
                picked /= np.linalg.norm(picked, axis=1, keepdims=True)
                for item, vector in zip(items, picked, strict=True):
                    pooled.registered[embedded_text(item)] = vector
            await store.memories.append_many(PROJECT, items)
            if pooled is not None:
                pooled.registered.clear()
        if store.indexer is not None:
            await store.indexer.aclose()
        clock.at = now - timedelta(hours=2)
        # What the daily job does: stored tiers as of now (else every stats call would first
        # re-derive 100k stale tiers; see get_memory_stats in "Scale").
        await maintenance.recalculate_tiers(store.repo, clock, settings.tiers)
        for s in range(20):
            sid = f"session-{s}"
            await store.conversations.start(PROJECT, sid)
            for n in range(30):
                await store.conversations.add_entry(
                    PROJECT,
                    sid,
                    type=EntryType.MESSAGE,
                    role=Role.USER if n % 2 == 0 else Role.ASSISTANT,
                    content=" ".join(rng.choices(WORDS, WEIGHTS, k=20)),
                )
            await store.conversations.compress(PROJECT, sid, source="fallback")
            await store.conversations.cache_put(
                PROJECT, sid, "search", {"query": f"q{s}"}, {"hits": s}, 5
            )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> float:
    started = time.perf_counter()
    _text(url)
    return (time.perf_counter() - started) * 1000


def _text(url: str) -> str:
    """The page at `url`, read to its last byte."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
        assert response.status == 200, (url, response.status)
    return str(body.decode())


def measure(db: Path, repeats: int, vectors: bool = False) -> dict[str, tuple[float, float, int]]:
    """Median and p90 milliseconds, and the page's bytes, per page."""
    port = _free_port()
    exe = Path(sys.executable).parent / "memstrata"
    env = {
        **os.environ,
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "MEMSTRATA_EMBEDDING_MODEL": "default" if vectors else "none",
        "MEMSTRATA_AUTH_TOKENS": TOKEN,
        "MEMSTRATA_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [str(exe), "serve", "--http", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        page = _text(f"{base}/p/{PROJECT}/memories")
        detail_id = int(page.split('data-id="', 1)[1].split('"', 1)[0])
        pages = {
            "projects /": "/",
            "overview": f"/p/{PROJECT}",
            "browse (newest 50)": f"/p/{PROJECT}/memories",
            "browse tier=ARCHIVED": f"/p/{PROJECT}/memories?tier=ARCHIVED",
            "browse tier=ACTIVE (rare)": f"/p/{PROJECT}/memories?tier=ACTIVE",
            "browse session=s7": f"/p/{PROJECT}/memories?session=s7",
            "search two words (keyword)": (
                f"/p/{PROJECT}/memories?q={WORDS[40]}+{WORDS[900]}&mode=keyword"
            ),
            "search ten words (keyword)": (
                f"/p/{PROJECT}/memories?q={SENTENCE.replace(' ', '+')}&mode=keyword"
            ),
            "memory detail": f"/p/{PROJECT}/memories/{detail_id}",
            "forgetting (prune preview, first 50)": f"/p/{PROJECT}/forgetting",
            "conversations (10 newest of 20 sessions)": f"/p/{PROJECT}/conversations",
        }
        first = _text(f"{base}/p/{PROJECT}/forgetting")
        if 'rel="next"' in first:
            # The link before rel="next" on the first page: the second page's keyset mark.
            link = first.split('rel="next"', 1)[0].rsplit('href="', 1)[1].split('"', 1)[0]
            pages["forgetting (second page)"] = link.replace("&amp;", "&")
        if vectors:
            pages["search two words (hybrid)"] = f"/p/{PROJECT}/memories?q={WORDS[40]}+{WORDS[900]}"
            pages["search ten words (hybrid)"] = f"/p/{PROJECT}/memories?q=" + SENTENCE.replace(
                " ", "+"
            )
        results: dict[str, tuple[float, float, int]] = {}
        for name, path in pages.items():
            for _ in range(3):
                _get(base + path)
            times = sorted(_get(base + path) for _ in range(repeats))
            size = len(_text(base + path).encode())
            p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
            results[name] = (statistics.median(times), p90, size)
        return results
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a fresh server")
    parser.add_argument("--db", type=Path, help="reuse (or keep) the store at this path")
    parser.add_argument(
        "--vectors",
        action="store_true",
        help="MiniLM vectors on every memory and the real model in the server (hybrid search)",
    )
    args = parser.parse_args(argv)
    runs: list[dict[str, tuple[float, float, int]]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "dashboard.db"
        if not db.exists():
            started = time.perf_counter()
            asyncio.run(build(db, args.size, args.vectors))
            print(f"built {args.size} memories in {time.perf_counter() - started:.0f} s")
        for run in range(args.runs):
            loads.append(os.getloadavg()[0])
            runs.append(measure(db, args.repeats, args.vectors))
            print(f"run {run + 1}: load {loads[-1]:.2f}", file=sys.stderr)
    names = list(runs[0])
    head = " | ".join(f"run {i + 1}" for i in range(len(runs)))
    print(
        f"\n{args.size:,} memories; load (1 min) before each run: "
        + ", ".join(f"{x:.2f}" for x in loads)
    )
    print(f"| page | median ms | {head} | p90 ms (last run) | bytes |")
    print("|---|---:|" + "---:|" * len(runs) + "---:|---:|")
    for name in names:
        medians = [r[name][0] for r in runs]
        each = " | ".join(f"{m:.1f}" for m in medians)
        _, p90, size = runs[-1][name]
        print(f"| {name} | {statistics.median(medians):.1f} | {each} | {p90:.1f} | {size:,} |")


if __name__ == "__main__":
    main()
