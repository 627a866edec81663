"""A transcript capture killed at any moment loses nothing and writes nothing twice.

The real `memstrata hook session-end` records a realistic transcript (Claude Code's recorded
one, the shared hook transcript and 60 or 150 more turns of prompts, tool calls, results and
answers) and is killed with SIGKILL at random moments, again and again, then run once to the
end. The conversation entries and the memories must then be exactly those of one capture
that was never interrupted, in a store of its own. Kill moments are drawn over the time an
uninterrupted capture took on this machine (half of them just after the capture is seen
writing), so a slow machine spreads them just as well; nothing here asserts on time. On
SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import sqlean

from memory_core.domain.models import Layer
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.e2e.conftest import memstrata_exe
from tests.hook_transcript import SESSION, first_part, noisy_part, second_part
from tests.pg import PostgresServer

pytestmark = pytest.mark.e2e

_RECORDED = Path(__file__).resolve().parents[1] / "data" / "claude_code_transcript.jsonl"
_KILLS = 12


def _line(uuid: str, parent: str, kind: str, content: Any, n: int) -> str:
    return (
        json.dumps(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/shop",
                "sessionId": SESSION,
                "version": "2.1.332",
                "gitBranch": "main",
                "type": kind,
                "message": {"role": kind, "content": content},
                "uuid": uuid,
                "timestamp": f"2026-11-24T{10 + n // 60:02d}:{n % 60:02d}:00.000Z",
            }
        )
        + "\n"
    )


def _turns(count: int) -> list[str]:
    """`count` turns: a prompt, a Bash call and its result, the answer."""
    lines: list[str] = []
    parent = "k-root"
    for n in range(count):
        ids = [f"k{n}-{part}" for part in "pcra"]
        call = {"type": "tool_use", "id": f"toolu_k{n}", "name": "Bash"}
        lines += [
            _line(ids[0], parent, "user", f"Check service {n}: is the queue worker {n} up?", n),
            _line(
                ids[1],
                ids[0],
                "assistant",
                [call | {"input": {"command": f"systemctl status worker-{n}"}}],
                n,
            ),
            _line(
                ids[2],
                ids[1],
                "user",
                [{"type": "tool_result", "tool_use_id": f"toolu_k{n}", "content": f"active {n}"}],
                n,
            ),
            _line(ids[3], ids[2], "assistant", f"Worker {n} is active since the {n}th.", n),
        ]
        parent = ids[3]
    return lines


def _transcript(turns: int) -> str:
    recorded = _RECORDED.read_text(encoding="utf-8")
    parts = first_part() + second_part() + noisy_part() + _turns(turns)
    return recorded + "".join(parts)


def _workspace(
    root: Path, transcript: str, store: dict[str, str]
) -> tuple[dict[str, str], dict[str, Any], Settings]:
    """A folder with the transcript, the hook's environment and payload, and the settings of
    the store (`store`: MEMSTRATA_DB or MEMSTRATA_DATABASE_URL)."""
    root.mkdir()
    (root / "transcript.jsonl").write_text(transcript, encoding="utf-8")
    env = {
        **store,
        "MEMSTRATA_PROJECT": "shop",
        "MEMSTRATA_PROJECT_SCOPE": "fixed",
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
    }
    payload = {
        "session_id": SESSION,
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root),
        "hook_event_name": "SessionEnd",
        "reason": "other",
    }
    settings = Settings(
        db=Path(store.get("MEMSTRATA_DB", root / "unused.db")),
        database_url=store.get("MEMSTRATA_DATABASE_URL"),
        project="shop",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
    )
    return env, payload, settings


def _start(env: dict[str, str], payload: dict[str, Any]) -> subprocess.Popen[bytes]:
    """The hook started as Claude Code starts it, its payload on stdin."""
    stdin = Path(env["HOME"]) / "payload.json"
    stdin.write_text(json.dumps(payload), encoding="utf-8")
    with stdin.open("rb") as handle:
        return subprocess.Popen(
            [str(memstrata_exe()), "hook", "session-end"],
            stdin=handle,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )


def _finish(env: dict[str, str], payload: dict[str, Any]) -> float:
    """Run the hook to its end; how long it took (to spread the kills over)."""
    began = time.monotonic()
    process = _start(env, payload)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0 and out == b"" and err == b"", err.decode()
    return time.monotonic() - began


async def _stored(settings: Settings) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The session's conversation entries and the project's memories, comparable."""
    async with open_container(settings) as c:
        entries = (await c.conversations.export("shop", SESSION)).entries
        memories = []
        for layer in Layer:
            memories += await c.repo.list_layer("shop", layer, None, newest_first=False)
    return (
        [(e.id, e.type, e.role, e.content, e.tool_name, e.source) for e in entries],
        sorted((m.layer, m.content, m.author, m.metadata.get("kind")) for m in memories),
    )


_COUNT = (
    "SELECT (SELECT count(*) FROM conversation_entries) + (SELECT count(*) FROM context_snapshots)"
)


def _rows(settings: Settings) -> int:
    """Conversation entries plus memories: grows as a capture writes."""
    if settings.database_url:
        return asyncio.run(_pg_rows(settings.database_url))
    if not settings.db.exists():
        return 0
    with contextlib.closing(sqlean.connect(str(settings.db), timeout=5)) as conn:
        try:
            (count,) = conn.execute(_COUNT).fetchone()
        except sqlean.OperationalError:
            return 0  # not migrated yet
    return int(count)


async def _pg_rows(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval(_COUNT))
    finally:
        await conn.close()


def _kill_while_writing(
    process: subprocess.Popen[bytes], settings: Settings, before: int, rng: random.Random
) -> bool:
    """SIGKILL soon after the capture is seen writing; whether it was still running."""
    while process.poll() is None and _rows(settings) == before:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.05))
    running = process.poll() is None
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=300)
    return running


@pytest.fixture(params=["sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """Two empty stores of one backend: for the uninterrupted capture, for the killed ones."""
    if request.param == "sqlite":
        yield (
            {"MEMSTRATA_DB": str(tmp_path / "clean.db")},
            {"MEMSTRATA_DB": str(tmp_path / "killed.db")},
        )
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    urls = [asyncio.run(server.create_database()) for _ in range(2)]
    yield {"MEMSTRATA_DATABASE_URL": urls[0]}, {"MEMSTRATA_DATABASE_URL": urls[1]}
    for url in urls:
        asyncio.run(server.drop_database(url))


def test_session_end_killed_at_random_moments_stores_one_capture(
    tmp_path: Path, stores: tuple[dict[str, str], dict[str, str]]
) -> None:
    # Fewer turns on PostgreSQL, whose writes take longer: as many kills land in the writing.
    turns = 60 if "MEMSTRATA_DATABASE_URL" in stores[0] else 150
    transcript = _transcript(turns)
    env, payload, settings = _workspace(tmp_path / "clean", transcript, stores[0])
    took = _finish(env, payload)
    clean_entries, clean_memories = asyncio.run(_stored(settings))
    assert len(clean_entries) > 4 * turns and len(clean_memories) > turns  # of substance

    env, payload, settings = _workspace(tmp_path / "killed", transcript, stores[1])
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    running = 0
    for n in range(_KILLS):
        process = _start(env, payload)
        if n % 2:
            # While it writes: the moments between a row and the cursor that follows it.
            running += _kill_while_writing(process, settings, _rows(settings), rng)
            continue
        time.sleep(rng.uniform(0.0, took))  # anywhere, start-up included
        running += process.poll() is None
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=300)
    _finish(env, payload)
    entries, memories = asyncio.run(_stored(settings))

    where = f"seed {seed}, {running} of {_KILLS} kills hit a running capture"
    assert [e[1:] for e in entries] == [e[1:] for e in clean_entries], where
    assert [e[0] for e in entries] == list(range(1, len(entries) + 1)), where
    assert memories == clean_memories, where
