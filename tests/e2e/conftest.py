"""Helpers for the end-to-end tests: the real `memstrata` console script in a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

PROJECT = "e2e"


def memstrata_exe() -> Path:
    """The installed console script, next to the interpreter running the tests."""
    exe = Path(sys.executable).parent / "memstrata"
    assert exe.exists(), f"{exe} is missing; install the project (make dev)"
    return exe


def run_session_end(
    env: dict[str, str], cwd: Path, session_id: str, transcript: Path, *, timeout: float = 180
) -> None:
    """`memstrata hook session-end` run to its end as Claude Code runs it; it must say nothing.

    `timeout` only guards against a hang, never a target.
    """
    payload = {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    done = subprocess.run(
        [str(memstrata_exe()), "hook", "session-end"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=True,
    )
    assert (done.stdout, done.stderr) == ("", "")


_TEST_CACHE = tempfile.mkdtemp(prefix="memstrata-test-cache-")


def server_env(db: Path, project: str = PROJECT, toolsets: str = "all") -> dict[str, str]:
    """A minimal environment: the database, the default project, the toolsets, PATH and HOME.

    Every toolset by default, so the suites reach every tool; tests of the default surface
    pass `toolsets="core,maintenance"`.
    """
    env = {"MEMSTRATA_DB": str(db), "MEMSTRATA_PROJECT": project, "MEMSTRATA_TOOLSETS": toolsets}
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    # serve records its opening answers under the cache directory (server.cli.serve_answers):
    # the suite's go to a directory of its own, never the person's ~/.cache.
    env["XDG_CACHE_HOME"] = _TEST_CACHE
    return env


def initialize_message(client: str) -> dict[str, Any]:
    """A raw JSON-RPC `initialize` request, for tests that speak the wire protocol by hand."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "0"},
        },
    }


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool result."""
    assert not result.is_error, f"tool failed: {result.content}"
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_text(result: Any) -> str:
    """The text of a failed tool result."""
    assert result.is_error, f"expected an error, got {result.structured_content}"
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@asynccontextmanager
async def stdio_server(db: Path, stderr_log: Path) -> AsyncIterator[Client]:
    """`memstrata serve` over stdio via the SDK client; the server's stderr goes to a file."""
    params = StdioServerParameters(command=str(memstrata_exe()), args=["serve"], env=server_env(db))
    with stderr_log.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
            yield client
