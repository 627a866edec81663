"""How long each dashboard page takes at 100k memories (a benchmark, not a test).

    python -m bench.dashboard --size 100000 --repeats 20

Builds a keyword-only store (model "none": 100k real embeddings would take minutes to build
and the search page's vector half is the `search` tool's own cost, measured in "Scale") of
`size` memories spread over the last 60 days, so every tier is populated and about half are
EXPIRED (the forgetting page lists them), plus 20 conversation sessions. Then it starts a real
`memstrata serve --http` with a bearer token on it and times each page over loopback
(request sent to last byte received, so an upper bound of the server's time), after warm-up
requests; prints the median and p90 per page in milliseconds.

Reading it: every page's median should stay under 200 ms at 100k memories; a loaded machine
raises every figure, so compare pages of one run.
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

from memory_core.config import Limits
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.models import Layer
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


async def build(db: Path, size: int) -> None:
    """`size` memories over the last 60 days, oldest first, and 20 sessions."""
    rng = random.Random(size)
    now = datetime.now(UTC)
    clock = MovingClock(now - timedelta(days=60))
    settings = Settings(
        db=db,
        embedding_model="none",
        schedule=ScheduleSettings(enabled=False),
        project=PROJECT,
        # Every appended row is kept (the default cap trims each session's working rows).
        limits=Limits(working_cap=size),
    )
    batch = 1000
    async with open_container(settings, clock) as store:
        for start in range(0, size, batch):
            clock.at = now - timedelta(days=60) + timedelta(days=60) * start / size
            items = [_item(rng, n) for n in range(start, min(size, start + batch))]
            await store.memories.append_many(PROJECT, items)
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
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
        assert response.status == 200, (url, response.status)
    return (time.perf_counter() - started) * 1000


def measure(db: Path, repeats: int) -> dict[str, tuple[float, float, int]]:
    """Median and p90 milliseconds, and the page's bytes, per page."""
    port = _free_port()
    exe = Path(sys.executable).parent / "memstrata"
    env = {
        **os.environ,
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "MEMSTRATA_EMBEDDING_MODEL": "none",
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
        detail_id = size_hint = 0
        with urllib.request.urlopen(
            urllib.request.Request(
                f"{base}/p/{PROJECT}/memories", headers={"Authorization": f"Bearer {TOKEN}"}
            ),
            timeout=60,
        ) as response:
            page = response.read().decode()
            detail_id = int(page.split('data-id="', 1)[1].split('"', 1)[0])
            size_hint = len(page)
        assert size_hint
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
            "memory detail": f"/p/{PROJECT}/memories/{detail_id}",
            "forgetting (prune dry run)": f"/p/{PROJECT}/forgetting",
            "conversations (10 newest of 20 sessions)": f"/p/{PROJECT}/conversations",
        }
        results: dict[str, tuple[float, float, int]] = {}
        for name, path in pages.items():
            for _ in range(3):
                _get(base + path)
            times = sorted(_get(base + path) for _ in range(repeats))
            with urllib.request.urlopen(
                urllib.request.Request(base + path, headers={"Authorization": f"Bearer {TOKEN}"}),
                timeout=60,
            ) as response:
                size = len(response.read())
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
    parser.add_argument("--db", type=Path, help="reuse (or keep) the store at this path")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "dashboard.db"
        if not db.exists():
            started = time.perf_counter()
            asyncio.run(build(db, args.size))
            print(f"built {args.size} memories in {time.perf_counter() - started:.0f} s")
        results = measure(db, args.repeats)
    print(f"\n| page ({args.size:,} memories) | median ms | p90 ms | bytes |")
    print("|---|---:|---:|---:|")
    for name, (median, p90, size) in results.items():
        print(f"| {name} | {median:.1f} | {p90:.1f} | {size:,} |")


if __name__ == "__main__":
    main()
