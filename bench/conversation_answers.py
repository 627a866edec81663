"""How large conversation-memory answers get: 15 context entries of 20 KB, then more entries.

    .venv/bin/python bench/conversation_answers.py

Through the in-memory MCP client (a real server on a temporary SQLite file, default
conversation settings, tokens counted as characters / 4): a session gets 15 `context`
entries of 20 KB each (the 15th crosses the 50,000-token threshold with 5 entries outside the
recent window, so a summary is requested of the client), then 5 more messages while the
client does not answer. Sizes are of the whole tool result as JSON (text content and
structuredContent), as a client receives it. Then the client pages through the request's
entries (if the server offers it), submits a summary, and reads the context back.
Reading it: `entry_answers` are the bytes each `add_session_entry` answer carries (the one
that requests a summary, at `request_at_entry`, is the largest); `request_json_bytes` is the
request itself, `context_answer` the context read back after the summary; a
client pays these in its model's context. A benchmark, not a test: the figures go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client

from server.app import build_server
from server.logging import configure_logging
from server.settings import ScheduleSettings, Settings

ENTRY_BYTES = 20_000
WORDS = [
    *("deploy", "release", "staging", "database", "migration", "service", "latency", "error"),
    *("budget", "review", "queue", "cache", "index", "tenant", "invoice", "report"),
    *("schedule", "backup", "replica", "shard", "token", "request", "handler"),
]


def _text(seed: int) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < ENTRY_BYTES:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:ENTRY_BYTES]


def _size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def measure(db: Path) -> dict[str, Any]:
    """Run the scenario and return the sizes in bytes."""
    # Keyword only: tokens are counted as characters / 4, so 20 KB is ~5,000 tokens (with the
    # default model's tokenizer this vocabulary counts ~3,150, and 15 entries stay under 50,000).
    settings = Settings(
        db=db,
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
        toolsets="core,conversations",
    )
    out: dict[str, Any] = {"entry_answers": []}
    async with Client(build_server(settings)) as client:
        await client.call_tool("start_session", {"session_id": "s"})
        request: dict[str, Any] | None = None
        for i in range(20):
            args: dict[str, Any] = (
                {"type": "context", "content": _text(i), "source": f"src/file_{i}.py"}
                if i < 15
                else {"type": "message", "role": "user", "content": f"next step {i}"}
            )
            result = await client.call_tool("add_session_entry", {"session_id": "s", **args})
            out["entry_answers"].append(_size(result))
            comp = (result.structured_content or {}).get("compression") or {}
            if comp.get("summary_request") and request is None:
                request = comp["summary_request"]
                out["request_at_entry"] = i + 1
        assert request is not None, "no summary was requested"
        out["request_json_bytes"] = len(json.dumps(request).encode())
        pages = 0
        for page in range(1, int(request.get("pages", 0)) + 1):  # the whole transcript, paged
            read = await client.call_tool("read_summary_request", {"session_id": "s", "page": page})
            pages += 1
            out.setdefault("page_answers", []).append(_size(read))
        out["pages_read"] = pages
        done = await client.call_tool(
            "submit_session_summary",
            {"session_id": "s", "summary": "Files 0-4 were read: deploy and release notes."},
        )
        out["submit_status"] = (done.structured_content or {}).get("status")
        context = await client.call_tool("get_session_context", {"session_id": "s"})
        out["context_answer"] = _size(context)
    answers = out["entry_answers"]
    out["entry_answer_max"] = max(answers)
    out["entry_answers_total"] = sum(answers)
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the figures as JSON."""
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    configure_logging("WARNING", "json")
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(Path(tmp) / "memory.db"))
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
