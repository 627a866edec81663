"""What typical tool answers cost a model, before and after the compact text rendering.

    python -m bench.answers                    # a Markdown table for docs/benchmarks.md
    python -m bench.answers --token-gap        # the budget counter against the tokenizer
    python -m bench.answers --token-gap --data DIR

"Before" is the indented JSON MCPServer wrote as the text content of a result model (the
structured object, `indent=2`), which is what clients showed the model until toolsets and
compact answers landed; "after" is the text content the server sends now. Both are measured
in the same run on the same answers, in characters and in WordPiece tokens (the product's
counter). Keyword mode, so no model is loaded. Reading it: after/before is the share of the
model's context an answer still takes; the structured object is sent unchanged beside the text.

`--token-gap` measures instead how far the budget counter (characters / 4, the one every
`token_budget` uses) is from the all-MiniLM-L6-v2 WordPiece tokenizer, on every LoCoMo turn of
a split (read in place): the ratio estimate / tokenizer in total, per turn (median, 5th and
95th percentile, how often the estimate is lower), on 20-turn texts (the size budgets cut),
and the time per turn of each. A ratio above 1 means a budget cut by the estimate holds fewer
real tokens than it says.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog
from mcp import Client

from bench.locomo import DEFAULT_DATA
from memory_core.domain.tokens import count_tokens
from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from server.app import build_server
from server.settings import ScheduleSettings, Settings

NOTES = [
    "Deployed v1.2 to staging after the billing fix",
    "The release train leaves every Tuesday at 10:00 UTC",
    "Alice owns the billing service; Bob owns search",
    "Staging database was restored from the Sunday backup",
    "Rolled back v1.1 because invoices doubled",
    "CI takes 14 minutes; the e2e stage is the slowest",
    "Use feature flags for anything touching payments",
    "The on-call rota changes on Mondays",
    "Customer Acme asked for CSV exports of invoices",
    "Search latency p95 is 40 ms after the cache change",
]


async def measure() -> list[tuple[str, int, int, int, int]]:
    """(answer, chars before, chars after, tokens before, tokens after) per typical call."""
    counter = WordPieceTokenCounter()
    rows: list[tuple[str, int, int, int, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db=Path(tmp) / "memory.db",
            schedule=ScheduleSettings(enabled=False),
            embedding_model="none",
            toolsets="all",
        )
        async with Client(build_server(settings)) as client:

            async def answer(label: str, tool: str, **args: Any) -> None:
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content
                before = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
                after = result.content[0].text  # type: ignore[union-attr]
                rows.append(
                    (label, len(before), len(after), counter.count(before), counter.count(after))
                )

            for note in NOTES:
                await client.call_tool("append", {"layer": "episodic", "content": note})
            await answer("append (one note)", "append", layer="episodic", content="CI is green")
            await answer("learn", "learn", key="user.editor", value="neovim")
            await answer("search, 10 hits", "search", query="the", limit=10, mode="keyword")
            await answer("load_context, 10 items", "load_context", limit=10)
            await answer("recall", "recall", key="user.editor")
            await answer("get_memory_stats", "get_memory_stats")
            await answer("prune_expired_contexts dry run", "prune_expired_contexts", dry_run=True)
            await client.call_tool("start_session", {"session_id": "s1"})
            for note in NOTES:
                entry = {"session_id": "s1", "type": "message", "role": "user", "content": note}
                assert not (await client.call_tool("add_session_entry", entry)).is_error
            await answer("get_session_context, 10 entries", "get_session_context", session_id="s1")
            for note in NOTES:
                await client.call_tool("scratchpad_write", {"session_id": "s1", "snippet": note})
            await answer("scratchpad_read, 10 notes", "scratchpad_read", session_id="s1")
    return rows


def token_gap(data: Path) -> None:
    """Print how far the budget counter is from the WordPiece tokenizer on a LoCoMo split."""
    with (data / "memories.jsonl").open(encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    wordpiece = WordPieceTokenCounter()
    est = [count_tokens(t) for t in texts]
    real = [wordpiece.count(t) for t in texts]
    ratios = [e / r for e, r in zip(est, real, strict=True) if r]
    q = statistics.quantiles(ratios, n=20)
    lower = sum(e < r for e, r in zip(est, real, strict=True))
    print(
        f"turns {len(texts)}: estimate {sum(est)}, tokenizer {sum(real)}, "
        f"ratio {sum(est) / sum(real):.3f}"
    )
    print(
        f"per turn: median {statistics.median(ratios):.3f}, p5 {q[0]:.3f}, p95 {q[-1]:.3f}, "
        f"estimate lower on {lower / len(texts):.1%}"
    )
    windows = [" ".join(texts[i : i + 20]) for i in range(0, len(texts) - 19, 20)]
    w = [count_tokens(x) / wordpiece.count(x) for x in windows]
    print(
        f"20-turn texts ({len(w)}): median {statistics.median(w):.3f}, "
        f"min {min(w):.3f}, max {max(w):.3f}"
    )
    for name, fn in (("estimate", count_tokens), ("tokenizer", wordpiece.count)):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        print(f"{name}: {(time.perf_counter() - start) / len(texts) * 1e6:.1f} us a turn")


def main(argv: list[str] | None = None) -> None:
    """Print the answers table, or the token gap with `--token-gap`."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--token-gap", action="store_true", help="measure the budget counter, not the answers"
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="LoCoMo split for --token-gap"
    )
    args = parser.parse_args(argv)
    if args.token_gap:
        token_gap(args.data)
        return
    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rows = asyncio.run(measure())
    print("| answer | chars before | chars after | tokens before | tokens after | after/before |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, cb, ca, tb, ta in rows:
        print(f"| {label} | {cb:,} | {ca:,} | {tb:,} | {ta:,} | {ta / tb:.2f} |")


if __name__ == "__main__":
    main()
