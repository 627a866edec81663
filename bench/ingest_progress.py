"""How often a long `ingest_document` call reports progress, for docs/benchmarks.md (not a test).

    python -m bench.ingest_progress                  # 1 MB document, the default model
    python -m bench.ingest_progress --chars 200000

A client that resets its request timeout on progress notifications (the TypeScript SDK's
`resetTimeoutOnProgress`) only times out when the gap between two notifications is longer
than its timeout. This drives the tool through the in-memory MCP client with a progress
callback and reports the time to the first notification, the gaps between them, and the
whole call. Synthetic text (seeded), no outside data.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from mcp import Client

from server.app import build_server
from server.logging import configure_logging
from server.settings import ScheduleSettings, Settings

WORDS = [
    "deploy",
    "release",
    "staging",
    "billing",
    "invoice",
    "customer",
    "report",
    "metric",
    "latency",
    "server",
    "database",
    "cache",
    "queue",
    "worker",
    "schedule",
    "token",
    "budget",
    "refund",
    "courier",
    "warranty",
]


def document(chars: int, seed: int = 1) -> str:
    """Paragraphs of 30-120 words until `chars` characters."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        paragraph = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120))) + "."
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)[:chars]


async def run(chars: int, model: str) -> None:
    """Ingest one document and print the progress timing."""
    text = document(chars)
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            db=Path(folder) / "bench.db",
            toolsets="all",
            embedding_model=model,
            schedule=ScheduleSettings(enabled=False),
            log_level="WARNING",
        )
        async with Client(build_server(settings)) as client:
            stamps: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                stamps.append(time.perf_counter())

            start = time.perf_counter()
            result = await client.call_tool(
                "ingest_document",
                {"tenant": "bench", "source": "big.md", "text": text},
                progress_callback=on_progress,
            )
            end = time.perf_counter()
    out = result.structured_content or {}
    gaps = [b - a for a, b in zip([start, *stamps], [*stamps, end], strict=True)]
    print(f"{chars:,} chars, {out.get('chunks')} chunks, embedded={out.get('embedded')}")
    print(f"call {end - start:.1f} s, {len(stamps)} progress notifications")
    print(f"first after {stamps[0] - start:.2f} s" if stamps else "no notifications")
    print(f"gaps: median {statistics.median(gaps):.1f} s, max {max(gaps):.1f} s")


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--model", default="all-MiniLM-L6-v2-int8")
    args = parser.parse_args()
    configure_logging("WARNING", "console")
    asyncio.run(run(args.chars, args.model))


if __name__ == "__main__":
    main()
