"""A killed export or backup leaves nothing the next run or `doctor` does not see (issue 34.7).

Real `memstrata export` and `memstrata backup` processes are killed with SIGKILL while they
write their `.NAME.<random>.partial` beside the target; `doctor` then names the leftover, and
the next run to the same target removes it, with a backup partial's -wal and -shm (which
SQLite leaves when the kill lands while the copy is being checked).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import sqlean

from memory_core.files import STALE_AFTER_SECONDS
from memory_core.storage.sqlite import apply_migrations, open_database
from server.cli.leftovers import find_partials, remove_stale
from tests.e2e.conftest import memstrata_exe, server_env

pytestmark = pytest.mark.e2e

ROWS = 6_000
ATTEMPTS = 8


def _seed(db: Path) -> None:
    async def migrate() -> None:
        conn = await open_database(db)
        try:
            await apply_migrations(conn)
        finally:
            await conn.close()

    asyncio.run(migrate())
    conn = sqlean.connect(str(db))
    text = "A memory of some length, so the files take a while to write. " * 30
    with conn:
        conn.executemany(
            "INSERT INTO context_snapshots (project, layer, content, content_hash, created_at,"
            " updated_at) VALUES ('p', 'episodic', ?, ?, '2026-01-01T00:00:00.000000Z',"
            " '2026-01-01T00:00:00.000000Z')",
            [(f"{n} {text}", f"{n:064x}") for n in range(ROWS)],
        )
    conn.close()


def _age(paths: list[Path]) -> None:
    """Make leftovers look as old as a killed run's are by the time anyone looks."""
    past = time.time() - STALE_AFTER_SECONDS - 60
    for path in paths:
        os.utime(path, (past, past))


def _kill_mid_write(argv: list[str], env: dict[str, str], target: Path) -> list[Path]:
    """Start the command and SIGKILL it once its partial file beside `target` holds bytes.

    Returns what it left. Retried a few times: on a fast machine a run can finish between
    two looks.
    """
    for _ in range(ATTEMPTS):
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while proc.poll() is None:
                partials = [
                    p
                    for p in target.parent.glob(f".{target.name}.*.partial")
                    if p.stat().st_size > 0
                ]
                if partials:
                    proc.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.002)
        finally:
            proc.wait(timeout=60)
        left = sorted(target.parent.glob(f".{target.name}.*"))
        if proc.returncode == -signal.SIGKILL and left:
            return left
        target.unlink(missing_ok=True)
    pytest.fail(f"no run of {argv[1]} could be killed mid-write in {ATTEMPTS} attempts")


def _doctor(env: dict[str, str], cwd: Path) -> dict[str, str]:
    done = subprocess.run(
        [str(memstrata_exe()), "doctor", "--json"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    check: dict[str, str] = checks["leftover partial files"]
    return check


@pytest.mark.parametrize("command", ["export", "backup"])
def test_a_killed_run_is_named_by_doctor_and_cleaned_by_the_next(
    tmp_path: Path, command: str
) -> None:
    db = tmp_path / "memory.db"
    _seed(db)
    env = {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    target = tmp_path / ("export.jsonl" if command == "export" else "backup.db")
    argv = [str(memstrata_exe()), command, str(target), "--force"]
    left = _kill_mid_write(argv, env, target)
    assert not target.exists()
    if command == "backup":
        # A kill during the integrity check leaves the copy's side files too.
        partial = next(p for p in left if p.name.endswith(".partial"))
        for suffix in ("-wal", "-shm"):
            Path(f"{partial}{suffix}").write_bytes(b"\0" * 32)
        left = sorted(target.parent.glob(f".{target.name}.*"))
    # While fresh they may belong to a run still going: neither named nor removed.
    assert _doctor(env, tmp_path)["status"] == "ok"
    _age(left)
    check = _doctor(env, tmp_path)
    assert check["status"] == "warn" and all(str(p) in check["detail"] for p in left), check
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert target.is_file()
    assert sorted(target.parent.glob(f".{target.name}.*")) == []
    assert _doctor(env, tmp_path)["status"] == "ok"


def test_only_the_targets_own_stale_leftovers_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    own = [tmp_path / ".export.jsonl.abcd1234.partial", tmp_path / ".export.jsonl.partial"]
    sides = [tmp_path / ".backup.db.k2j4h5g6.partial-wal", tmp_path / ".backup.db.k2j4h5g6.partial"]
    fresh = tmp_path / ".export.jsonl.zzzz9999.partial"
    other = tmp_path / ".export.jsonl.notes"
    for path in (*own, *sides, fresh, other):
        path.write_text("x")
    _age([*own, *sides, other])
    assert remove_stale(target) == sorted(own)
    assert fresh.exists() and other.exists() and all(p.exists() for p in sides)
    assert find_partials(tmp_path) == sorted(sides)
    # A side file being written keeps its whole group: the run is still going.
    os.utime(sides[0])
    assert find_partials(tmp_path) == []
