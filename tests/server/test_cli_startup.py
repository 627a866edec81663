"""Start-up failures a person at a terminal can act on, and a database only its owner reads."""

from __future__ import annotations

import asyncio
import json
import stat
import threading
from pathlib import Path

import pytest

from memory_core.errors import StorageError
from memory_core.storage.sqlite import open_database
from tests.server.test_cli import run_cli

PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not PROC.is_dir(), reason="needs Linux /proc")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("COLUMNS", "160")


@needs_proc
def test_migrate_where_no_file_can_be_created_names_the_path_and_the_cause(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", "/proc/x.db")
    code, _, err = run_cli(capsys, "migrate")
    assert code == 1
    assert "opening the database /proc/x.db: cannot create files there" in err
    assert "Traceback" not in err


def test_migrate_under_a_file_says_the_file_is_in_the_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "hostname"
    blocker.write_text("not a folder")
    for db in (blocker / "x.db", blocker / "a" / "b" / "x.db"):
        monkeypatch.setenv("MEMSTRATA_DB", str(db))
        code, _, err = run_cli(capsys, "migrate")  # raised FileExistsError before
        assert code == 1
        assert f"{db}: {blocker} is a file, not a folder" in err


@needs_proc
def test_doctor_fails_a_folder_that_refuses_new_files(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", "/proc/x.db")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    check = next(c for c in json.loads(out)["checks"] if c["name"] == "database path")
    assert code == 4 and check["status"] == "fail"
    assert "cannot create /proc/x.db: /proc refuses new files" in check["detail"]


def test_doctor_leaves_nothing_behind_when_it_probes_a_folder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "new.db"))
    code, _, _ = run_cli(capsys, "doctor")
    assert code == 0 and list(tmp_path.iterdir()) == []


def test_a_failed_open_waits_for_the_driver_thread(tmp_path: Path) -> None:
    """aiosqlite's worker must be gone before the loop closes ("Event loop is closed")."""
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an SQLite database " * 100)

    async def fail_to_open() -> None:
        def workers() -> list[threading.Thread]:
            return [t for t in threading.enumerate() if "_connection_worker" in t.name]

        for _ in range(20):
            with pytest.raises(StorageError):
                await open_database(garbage)  # the driver thread starts, then the open fails
            assert workers() == []

    asyncio.run(fail_to_open())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_and_its_wal_files_are_private(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "private.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(db))
    code, _, _ = run_cli(capsys, "migrate")
    assert code == 0 and _mode(db) == 0o600

    async def write_and_look() -> tuple[int, int]:
        conn = await open_database(db)
        try:
            await conn.execute("CREATE TABLE t (x)")
            await conn.execute("INSERT INTO t VALUES (1)")
            wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
            return _mode(wal), _mode(shm)
        finally:
            await conn.close()

    assert asyncio.run(write_and_look()) == (0o600, 0o600)
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 0 and "readable by other users" not in out
    backup = tmp_path / "copy.db"
    code, _, _ = run_cli(capsys, "backup", str(backup))
    assert code == 0 and _mode(backup) == 0o600


def test_an_existing_databases_mode_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "shared.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(db))
    assert run_cli(capsys, "migrate")[0] == 0
    db.chmod(0o640)  # the owner chose to share it with a group
    assert run_cli(capsys, "migrate")[0] == 0
    assert _mode(db) == 0o640
