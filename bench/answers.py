"""What typical tool answers cost a model, before and after the compact text rendering.

    python -m bench.answers            # a Markdown table for docs/benchmarks.md

"Before" is the indented JSON MCPServer wrote as the text content of a result model (the
structured object, `indent=2`), which is what clients showed the model until toolsets and
compact answers landed; "after" is the text content the server sends now. Both are measured
in the same run on the same answers, in characters and in WordPiece tokens (the product's
counter). Keyword mode, so no model is loaded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import structlog
from mcp import Client

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


def main() -> None:
    """Print the table."""
    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    rows = asyncio.run(measure())
    print("| answer | chars before | chars after | tokens before | tokens after | after/before |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, cb, ca, tb, ta in rows:
        print(f"| {label} | {cb:,} | {ca:,} | {tb:,} | {ta:,} | {ta / tb:.2f} |")


if __name__ == "__main__":
    main()
