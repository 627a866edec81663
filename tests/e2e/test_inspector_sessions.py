"""The MCP Inspector CLI reads a conversation session's memory state (issue 36).

Each Inspector call spawns a fresh `memstrata serve` over stdio; the calls share a database.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import memstrata_exe
from tests.e2e.test_inspector import inspector_path

pytestmark = pytest.mark.e2e

PROJECT = "inspector"


def inspect(db: Path, method: str, *options: str) -> dict[str, Any]:
    """One `mcp-inspector --cli` call against `memstrata serve`; the JSON it prints."""
    exe = inspector_path()
    if not exe.exists():
        pytest.fail(f"MCP Inspector CLI not found at {exe}: run `make inspector`")
    command = [
        str(exe),
        "--cli",
        "-e",
        f"MEMSTRATA_DB={db}",
        "-e",
        f"MEMSTRATA_PROJECT={PROJECT}",
        "-e",
        "MEMSTRATA_TOOLSETS=core,conversations",
        "-e",
        "MEMSTRATA_EMBEDDING_MODEL=none",
        str(memstrata_exe()),
        "serve",
        "--method",
        method,
        *options,
    ]
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"{command}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return dict(json.loads(done.stdout))


def call(db: Path, tool: str, **args: str) -> None:
    options = ["--tool-name", tool]
    for name, value in args.items():
        options += ["--tool-arg", f"{name}={value}"]
    result = inspect(db, "tools/call", *options)
    assert not result.get("isError"), result


def test_inspector_reads_a_session_resource_and_sets_a_log_level(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    call(db, "start_session", session_id="insp1")
    call(db, "add_session_entry", session_id="insp1", type="message", role="user", content="Hi")

    templates = inspect(db, "resources/templates/list")["resourceTemplates"]
    assert "memory://{project}/session/{session_id}" in {t["uriTemplate"] for t in templates}
    uri = f"memory://{PROJECT}/session/insp1"
    (content,) = inspect(db, "resources/read", "--uri", uri)["contents"]
    assert content["uri"] == uri and content["mimeType"] == "text/plain"
    assert content["text"].startswith(f"Session: insp1 | Project: {PROJECT} | Exchanges: 0")
    assert "Entries: 1 (1 active, 0 compressed)" in content["text"]
    assert "user: Hi" in content["text"]  # what get_session_context hands the model

    # The server offers logging (setLevel) now; the Inspector's call succeeds.
    assert inspect(db, "logging/setLevel", "--log-level", "info") == {}
