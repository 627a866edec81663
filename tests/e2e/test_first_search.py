"""The first search of a new `memstrata serve` process finds memories by meaning."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.conftest import memstrata_exe, ok, server_env

pytestmark = pytest.mark.e2e

EVENT = "Deployed v1.2 to staging"
PARAPHRASE = "release pushed to the test environment"  # no word in common with EVENT


@asynccontextmanager
async def serve(db: Path, log: Path, **env: str) -> AsyncIterator[Client]:
    """`memstrata serve` over stdio with extra MEMSTRATA_* variables."""
    params = StdioServerParameters(
        command=str(memstrata_exe()), args=["serve"], env={**server_env(db), **env}
    )
    with log.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
            yield client


async def first_search(db: Path, log: Path, **env: str) -> dict[str, Any]:
    """A new process whose first call is a search for the paraphrase (as the instructions ask)."""
    async with serve(db, log, **env) as client:
        return ok(await client.call_tool("search", {"query": PARAPHRASE, "explain": True}))


def found_by_meaning(result: dict[str, Any]) -> None:
    assert result["mode"] == "hybrid", result
    assert [h["content"] for h in result["hits"]] == [EVENT]
    assert result["hits"][0]["signals"]["vector_rank"] == 1
    assert "notes" not in result  # none: the default, []


@pytest.mark.parametrize("preload", [None, "true"], ids=["default", "preload"])
async def test_a_new_process_finds_a_paraphrase_at_its_first_search(
    db_path: Path, tmp_path: Path, preload: str | None
) -> None:
    log = tmp_path / "stderr.log"
    env = {} if preload is None else {"MEMSTRATA_EMBEDDING_PRELOAD": preload}
    async with serve(db_path, log, **env) as client:
        ok(await client.call_tool("append", {"layer": "episodic", "content": EVENT}))

    found_by_meaning(await first_search(db_path, log, **env))


async def test_rows_without_vectors_are_embedded_at_start_up(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    kept = tmp_path / "kept.db"
    # A keyword-only period: the server ran without a model.
    async with serve(kept, log, MEMSTRATA_EMBEDDING_MODEL="none") as client:
        ok(await client.call_tool("append", {"layer": "episodic", "content": EVENT}))
    # INFO asked for: stdio serve logs only warnings by default.
    found_by_meaning(await first_search(kept, log, MEMSTRATA_LOG_LEVEL="INFO"))
    assert '"event": "vectors.backfilled"' in log.read_text(encoding="utf-8")

    # An import (exports carry no vectors) into a new store.
    export, imported = tmp_path / "memories.jsonl", tmp_path / "imported.db"
    for db, command in ((kept, ["export", str(export)]), (imported, ["import", str(export)])):
        await anyio.run_process([str(memstrata_exe()), *command], env=server_env(db))
    found_by_meaning(await first_search(imported, log))
