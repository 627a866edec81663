"""`memstrata serve` start-up as a person sees it: honest messages and documented exit codes."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import free_port, memstrata_exe, server_env

pytestmark = pytest.mark.e2e

SERVING = "memstrata: serving MCP at"


def _env(db: Path) -> dict[str, str]:
    return {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}


def _serve(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(memstrata_exe()), "serve", "--http", *args],
        env=_env(db),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_busy_port_exits_6_without_claiming_to_serve(db_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(db_path, "--host", "127.0.0.1", "--port", str(port))
    assert done.returncode == 6, done.stderr  # uvicorn's own exit was 3, "not found"
    assert f"memstrata: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert SERVING not in done.stderr
    assert "Traceback" not in done.stderr


def test_refusing_an_open_interface_does_not_claim_to_serve(db_path: Path) -> None:
    done = _serve(db_path, "--host", "0.0.0.0", "--port", str(free_port()))
    assert done.returncode == 1
    assert "refusing to serve HTTP on 0.0.0.0 without authentication" in done.stderr
    assert SERVING not in done.stderr
    # Refused before the store is opened: no database is created or migrated (issue 35, N14).
    assert not db_path.exists()
    assert "migration.applied" not in done.stderr


def test_serving_is_announced_once_the_port_takes_connections(
    db_path: Path, tmp_path: Path
) -> None:
    port = free_port()
    err_path = tmp_path / "stderr.log"
    with err_path.open("w") as err:
        proc = subprocess.Popen(
            [str(memstrata_exe()), "serve", "--http", "--host", "127.0.0.1", "--port", str(port)],
            env=_env(db_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60  # a start-up bound, not a speed assertion
        while SERVING not in err_path.read_text():
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.05)
        # The line is only written after bind+listen: connecting now must not be refused.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert f"{SERVING} http://127.0.0.1:{port}/mcp (database {db_path})" in err_path.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
