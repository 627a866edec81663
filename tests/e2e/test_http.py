"""`memstrata serve --http`: streamable HTTP at /mcp from the real console script."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp import Client

from tests.e2e.conftest import PROJECT, free_port, initialize_message, memstrata_exe, ok, server_env

pytestmark = pytest.mark.e2e

START_DEADLINE = 20.0


@dataclass
class HttpServer:
    """A running `memstrata serve --http`, its output captured in files."""

    proc: subprocess.Popen[bytes]
    port: int
    db: Path
    stdout_path: Path
    stderr_path: Path
    _stopped: bool = field(default=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> tuple[str, str]:
        """Interrupt the server (kill it if it lingers); return its stdout and stderr."""
        if not self._stopped:
            self._stopped = True
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        return (
            self.stdout_path.read_text(encoding="utf-8"),
            self.stderr_path.read_text(encoding="utf-8"),
        )


def _wait_until_listening(server: HttpServer) -> None:
    deadline = time.monotonic() + START_DEADLINE
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            _, stderr = server.stop()
            pytest.fail(f"server exited with {server.proc.returncode}:\n{stderr}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    _, stderr = server.stop()
    pytest.fail(f"server did not listen on port {server.port} within {START_DEADLINE} s:\n{stderr}")


def _start(db_path: Path, tmp_path: Path, toolsets: str = "all") -> HttpServer:
    port = free_port()
    stdout_path, stderr_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [
                str(memstrata_exe()),
                "serve",
                "--http",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=server_env(db_path, toolsets=toolsets),
        )
    server = HttpServer(proc, port, db_path, stdout_path, stderr_path)
    _wait_until_listening(server)
    return server


@pytest.fixture
def http_server(db_path: Path, tmp_path: Path) -> Iterator[HttpServer]:
    server = _start(db_path, tmp_path)
    try:
        yield server
    finally:
        server.stop()


async def test_http_lists_the_configured_toolsets_without_runtime_changes(
    db_path: Path, tmp_path: Path
) -> None:
    server = _start(db_path, tmp_path, toolsets="core,conversations")
    try:
        async with Client(server.url, read_timeout_seconds=30) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            refused = await client.call_tool("get_memory_stats", {})
        # One HTTP server serves many clients: no client may change the list for the others.
        assert "enable_toolset" not in names and "get_memory_stats" not in names
        assert {"append", "search", "start_session", "add_session_entry"} <= names
        assert refused.is_error
    finally:
        server.stop()


async def test_tools_over_streamable_http(http_server: HttpServer):
    async with Client(http_server.url, read_timeout_seconds=30) as client:
        stored = ok(
            await client.call_tool(
                "append", {"layer": "episodic", "content": "Served over streamable HTTP"}
            )
        )
        found = ok(
            await client.call_tool("search", {"query": "streamable", "limit": 3, "explain": True})
        )
        learned = ok(await client.call_tool("learn", {"key": "transport", "value": "http"}))
        recalled = ok(await client.call_tool("recall", {"key": "transport"}))

    assert stored["status"] == "created"
    assert stored["project"] == PROJECT
    assert [hit["id"] for hit in found["hits"]] == [stored["id"]]
    assert found["hits"][0]["signals"]["bm25_rank"] == 1
    assert learned["status"] == "created"
    assert recalled["found"] is True
    assert recalled["value"] == "http"

    stdout, stderr = http_server.stop()
    assert http_server.proc.returncode == 0, stderr
    assert stdout == ""
    assert http_server.url in stderr
    assert str(http_server.db) in stderr


def _post_initialize(port: int, host: str) -> int:
    body = initialize_message("host-check")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Host": host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def test_foreign_host_header_is_rejected(http_server: HttpServer):
    assert _post_initialize(http_server.port, "evil.example") == 421  # DNS rebinding
    assert _post_initialize(http_server.port, f"127.0.0.1:{http_server.port}") == 200
