"""SIGKILL `memstrata serve` in the middle of a write load, again and again, then check the file."""

from __future__ import annotations

import json
import queue
import random
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
import sqlean

from tests.e2e.conftest import (
    PROJECT,
    initialize_message,
    memstrata_exe,
    ok,
    server_env,
    stdio_server,
)

pytestmark = pytest.mark.e2e

KILLS = 15
WRITES_PER_ROUND = 300
FIRST_ID = 100


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _round(db: Path, errlog: IO[bytes], n: int, rng: random.Random) -> tuple[dict[str, int], int]:
    """One server life: pipeline appends, SIGKILL it mid-load; the acknowledged ones."""
    env = {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    proc = subprocess.Popen(
        [str(memstrata_exe()), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=env,
        text=True,
        encoding="utf-8",
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    reader.start()
    contents = {FIRST_ID + i: f"crash round {n} write {i}" for i in range(WRITES_PER_ROUND)}
    messages: list[dict[str, Any]] = [
        initialize_message("crash-test"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    messages += [
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "append", "arguments": {"layer": "episodic", "content": text}},
        }
        for rid, text in contents.items()
    ]
    acked: dict[str, int] = {}
    seen: list[str] = []
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        # Wait for the first acknowledged write, then kill at a random moment after it.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line is not None, "server exited before acknowledging a write"
            seen.append(line)
            if json.loads(line).get("id", 0) >= FIRST_ID:
                break
        time.sleep(rng.uniform(0.0, 0.5))
        proc.kill()  # SIGKILL: no shutdown code runs
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    reader.join(timeout=10)
    while (line := lines.get_nowait()) is not None:
        seen.append(line)
    for line in seen:
        if not line.endswith("\n"):
            continue  # a line cut off by the kill was never a complete acknowledgement
        message = json.loads(line)
        result = message.get("result")
        if message.get("id", 0) >= FIRST_ID and result and not result["isError"]:
            acked[contents[message["id"]]] = int(result["structuredContent"]["id"])
    for pipe in (proc.stdin, proc.stdout):
        pipe.close()
    return acked, len(acked)


async def test_sigkill_mid_write_loses_no_acknowledged_write(db_path: Path, tmp_path: Path):
    rng = random.Random(6)
    acked: dict[str, int] = {}
    interrupted = 0
    with (tmp_path / "servers.log").open("wb") as errlog:
        for n in range(KILLS):
            got, count = _round(db_path, errlog, n, rng)
            acked.update(got)
            interrupted += count < WRITES_PER_ROUND
    assert interrupted >= KILLS // 2, "most rounds must be killed with writes in flight"
    assert len(acked) >= KILLS  # every round acknowledged at least one write

    conn = sqlean.connect(str(db_path))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows: dict[str, list[int]] = {}
        for memory_id, content in conn.execute(
            "SELECT id, content FROM context_snapshots WHERE project = ?", (PROJECT,)
        ):
            rows.setdefault(content, []).append(int(memory_id))
        # The project's own keyword table (migration 0011).
        (table_id,) = conn.execute(
            "SELECT id FROM context_snapshots_fts_projects WHERE project = ?", (PROJECT,)
        ).fetchone()
        fts = conn.execute(f"SELECT count(*) FROM context_snapshots_fts_{table_id}").fetchone()[0]
    finally:
        conn.close()
    missing = [c for c in acked if c not in rows]
    assert missing == []
    assert all(rows[c] == [i] for c, i in acked.items())
    assert fts == sum(len(ids) for ids in rows.values())  # the FTS index survived in step

    # A restarted server serves the survivors.
    async with stdio_server(db_path, tmp_path / "final.log") as client:
        stats = ok(await client.call_tool("get_memory_stats", {}))
        found = ok(await client.call_tool("search", {"query": "crash round 0", "limit": 1}))
    assert stats["total"] == len(rows) >= len(acked)
    assert len(found["hits"]) == 1
