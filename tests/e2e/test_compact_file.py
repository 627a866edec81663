"""`memstrata compact-file` on a real file: deleted text leaves the file's bytes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import memstrata_exe, ok, server_env, stdio_server

pytestmark = pytest.mark.e2e

GONE = "quixoticzebrafish847"


def _bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


def _cli(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    return subprocess.run(
        [str(memstrata_exe()), *argv], env=env, capture_output=True, text=True, timeout=120
    )


async def test_deleted_text_is_gone_from_the_file_after_compact_file(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        for i in range(150):
            ok(
                await client.call_tool(
                    "append", {"layer": "episodic", "content": f"ordinary note {i} kept"}
                )
            )
        doomed = ok(
            await client.call_tool(
                "append", {"layer": "episodic", "content": f"the {GONE} lives here"}
            )
        )
        ok(await client.call_tool("forget", {"id": doomed["id"]}))
    # secure_delete zeroes the row, but FTS5 keeps the deleted row's words in its index
    # segments until they are merged: the word is still in the file.
    assert GONE.encode() in _bytes(db_path)

    done = _cli(db_path, "compact-file", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["bytes_freed"] == max(report["bytes_before"] - report["bytes_after"], 0)
    assert report["bytes_after"] == len(_bytes(db_path))
    assert GONE.encode() not in _bytes(db_path)

    # The store is whole: the kept notes are still found, the forgotten one is not.
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        kept = ok(await client.call_tool("search", {"query": "ordinary note 42"}))
        assert kept["hits"]
        lost = ok(await client.call_tool("search", {"query": GONE}))
        assert all(GONE not in hit["content"] for hit in lost["hits"])
    assert _cli(db_path, "doctor").returncode == 0


def test_compact_file_without_a_database_says_so(tmp_path: Path):
    done = _cli(tmp_path / "missing.db", "compact-file")
    assert done.returncode == 3
    assert "no database" in done.stderr
