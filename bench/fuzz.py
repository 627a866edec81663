"""Hostile tool calls in bulk through an in-memory MCP client (the `make test` fuzz, scaled up).

    .venv/bin/python -m bench.fuzz --cases 20000

Every call must return a result or a tool error with a message (no internal error, no SQL or
traceback), and a project the fuzzer never names must be unchanged throughout.

Reading it: `failures` must be 0 (it exits 1 otherwise); `tool_errors` are the expected refusals
of hostile input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from mcp import Client

from server.app import build_server
from server.settings import ScheduleSettings, Settings
from tests.server.test_fuzz_tools import LEAKS, VAULT, tool_calls


def generate(cases: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """`cases` tool calls drawn from the test suite's strategy."""
    calls: list[tuple[str, dict[str, Any]]] = []

    @settings(
        max_examples=cases,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(call=tool_calls())
    def collect(call: tuple[str, dict[str, Any]]) -> None:
        calls.append(call)

    collect._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    collect()
    return [c for c in calls if c[1].get("project") != VAULT]


async def run(calls: list[tuple[str, dict[str, Any]]], db: Path) -> dict[str, Any]:
    """Send every call; count results, tool errors and failures of the invariants."""
    # Every toolset listed: a tool of a toolset that is not enabled answers only "not enabled".
    config = Settings(
        db=db,
        project="fuzz",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
        toolsets="all",
    )
    failures: list[str] = []
    ok = errors = 0
    began = time.monotonic()
    async with Client(build_server(config)) as client:
        await client.call_tool("learn", {"key": "vault.fact", "value": "kept", "project": VAULT})
        vault = await client.call_tool("get_memory_stats", {"project": VAULT})
        assert vault.structured_content is not None
        before = vault.structured_content["total"], vault.structured_content["content_bytes"]
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            if result.is_error:
                errors += 1
                text = " ".join(getattr(b, "text", "") for b in result.content)
                if not text.strip() or any(leak in text for leak in (*LEAKS, str(db.parent))):
                    failures.append(f"{tool} {json.dumps(args)[:200]}: {text[:200]}")
            elif result.structured_content is None:
                failures.append(f"{tool}: no structured content")
            else:
                ok += 1
        vault = await client.call_tool("get_memory_stats", {"project": VAULT})
        assert vault.structured_content is not None
        after = vault.structured_content["total"], vault.structured_content["content_bytes"]
    if after != before:
        failures.append(f"vault changed: {before} -> {after}")
    return {
        "cases": len(calls),
        "ok": ok,
        "tool_errors": errors,
        "failures": len(failures),
        "seconds": round(time.monotonic() - began, 1),
        "examples": failures[:10],
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()
    calls = generate(args.cases, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        summary = asyncio.run(run(calls, Path(scratch) / "fuzz.db"))
    print(json.dumps(summary))
    sys.exit(1 if summary["failures"] else 0)


if __name__ == "__main__":
    main()
