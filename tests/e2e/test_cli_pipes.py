"""The CLI in a pipe, as `memstrata stats | cat` runs it: whole headers, no log noise."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import memstrata_exe, server_env

pytestmark = pytest.mark.e2e


def _run(db: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none", **env}
    full.pop("COLUMNS", None)  # as in a shell pipe: no width given
    return subprocess.run(
        [str(memstrata_exe()), *argv],
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,  # stdout is a pipe, not a terminal
        text=True,
        timeout=120,
    )


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_stats_in_a_pipe_keeps_whole_headers(db_path: Path) -> None:
    assert _run(db_path, "migrate").returncode == 0
    done = _run(db_path, "stats")
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "project" in line)
    for column in ("project", "total", "ARCHIVED", "procedural", "text bytes"):
        assert column in header
    assert "…" not in done.stdout


def test_commands_log_only_warnings_unless_asked(db_path: Path) -> None:
    quiet = _run(db_path, "migrate")
    assert quiet.returncode == 0
    assert _json_lines(quiet.stderr) == []
    assert "database up to date" in quiet.stderr  # the command's own message stays
    assert _json_lines(_run(db_path, "stats").stderr) == []
    verbose = _run(db_path, "-v", "stats")
    assert {e["level"] for e in _json_lines(verbose.stderr)} == {"info"}
    by_env = _run(db_path, "stats", MEMSTRATA_LOG_LEVEL="INFO")
    assert any(e["event"] == "store.opened" for e in _json_lines(by_env.stderr))
