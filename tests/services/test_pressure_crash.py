"""SIGKILL a real process enforcing the storage cap inside a batch: the store stays whole.

The child runs `enforce_cap` on the file in batches; its third batch deletes its rows and then
waits (the delete is patched to announce itself and sleep inside the transaction), so the kill
lands mid-transaction every time, with two batches committed, without any timing in the test.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import aiosqlite
import sqlean

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.services.pressure import enforce_cap
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession
from server.settings import Settings
from tests.fakes import START, FrozenClock
from tests.storage.test_pressure import draft

BATCH = 40
ROWS = 400
CHILD = """
import asyncio, sys
from datetime import datetime

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.services.pressure import enforce_cap
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, open_database
from memory_core.storage.sqlite import pressure

real_delete = pressure.delete_listed
batches = 0


async def delete_then_wait(session, ids):
    global batches
    batches += 1
    await real_delete(session, ids)
    if batches == 3:  # inside the third batch's transaction, its rows already deleted
        print("mid", flush=True)
        await asyncio.sleep(3600)


pressure.delete_listed = delete_then_wait


class Clock:
    def now(self):
        return datetime.fromisoformat(sys.argv[2])


async def main():
    db = await open_database(sys.argv[1])
    repo = SqliteMemoryRepository(SqliteSession(db))
    policy = PressurePolicy(max_memories=int(sys.argv[3]), low_water=0.1)
    await enforce_cap(repo, Clock(), TierPolicy(), policy, "p", batch=int(sys.argv[4]))
    print("end", flush=True)


asyncio.run(main())
"""


def consistent(path: Path) -> dict[str, int]:
    """Check the file whole and its derived tables in step; a few counts of it."""
    conn = sqlean.connect(str(path))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT count(*) FROM context_snapshots").fetchone()[0]
        counted = conn.execute("SELECT coalesce(sum(n), 0) FROM memory_counts").fetchone()[0]
        (table,) = conn.execute(
            "SELECT id FROM context_snapshots_fts_projects WHERE project = 'p'"
        ).fetchone()
        indexed = conn.execute(f"SELECT count(*) FROM context_snapshots_fts_{table}").fetchone()[0]
        pinned = conn.execute("SELECT count(*) FROM context_snapshots WHERE pinned").fetchone()[0]
        history = conn.execute(
            "SELECT count(*) FROM context_snapshots WHERE superseded_by IS NOT NULL"
        ).fetchone()[0]
    finally:
        conn.close()
    assert counted == rows and indexed == rows
    return {"rows": rows, "pinned": pinned, "history": history}


def kill_mid_batch(path: Path, at: str) -> str:
    """Run the child until it announces its third batch, SIGKILL it; its first line."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), at, "100", str(BATCH)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)  # no shutdown code runs, no ROLLBACK is sent
    child.wait()
    child.stdout.close()
    return line


async def test_sigkill_mid_batch_leaves_whole_batches(
    db: aiosqlite.Connection, settings: Settings
) -> None:
    repo = SqliteMemoryRepository(SqliteSession(db))
    added = await repo.add_many([draft(f"crash note {i}") for i in range(ROWS)], START)
    ids = [o.memory.id for o in added]
    await repo.set_pinned("p", ids[:5], True)
    # Row 5 is superseded by a newer row: the newer one must survive while row 5 does.
    await repo.add(draft("crash note five, corrected", supersedes=(ids[5],)), START)
    later = START.replace(year=START.year + 1)  # everything EXPIRED
    before = consistent(settings.db)
    assert before == {"rows": ROWS + 1, "pinned": 5, "history": 1}

    assert kill_mid_batch(settings.db, later.isoformat()) == "mid"

    after = consistent(settings.db)
    assert after["rows"] == before["rows"] - 2 * BATCH  # two whole batches, not the third
    assert after["pinned"] == 5

    # The next enforcement finishes the job from where the kill left it.
    policy = PressurePolicy(max_memories=100, low_water=0.1)
    outcome = await enforce_cap(repo, FrozenClock(later), TierPolicy(), policy, "p", batch=BATCH)
    final = consistent(settings.db)
    assert final["rows"] == 10 == after["rows"] - len(outcome.ids)
    assert final["pinned"] == 5
