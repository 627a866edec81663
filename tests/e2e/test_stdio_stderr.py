"""`memstrata serve` over stdio writes only warnings and errors on stderr unless asked for more.

Claude Code shows every stderr line of a stdio server as [ERROR] in its log, so the start-up
INFO lines (store opened, server starting) stay out of it by default; MEMSTRATA_LOG_LEVEL
still brings them back.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import initialize_message, memstrata_exe, server_env

pytestmark = pytest.mark.e2e


def serve_once(db: Path, **env: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Initialize and list tools, then close stdin; the answers and the stderr lines."""
    messages = [
        initialize_message("stderr-test"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = subprocess.run(
        [str(memstrata_exe()), "serve"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        env={**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none", **env},
        check=False,
        timeout=300,  # a hang guard, not a speed limit
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a.get("id") for a in answers] == [1, 2]
    return answers, [json.loads(line) for line in done.stderr.splitlines()]


def test_stdio_serve_keeps_info_off_stderr_by_default(tmp_path: Path) -> None:
    _, logged = serve_once(tmp_path / "memory.db")
    assert [line for line in logged if line.get("level") not in ("warning", "error")] == []


def test_memstrata_log_level_still_brings_info_back(tmp_path: Path) -> None:
    _, logged = serve_once(tmp_path / "memory.db", MEMSTRATA_LOG_LEVEL="INFO")
    assert "server.starting" in {line.get("event") for line in logged}
