"""The dashboard over plain HTTP (no browser): open on loopback without tokens, as /mcp is;
Host checks; bearer headers; switching it off; and `memstrata ui`."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import free_port, memstrata_exe, server_env
from tests.e2e.test_http import HttpServer, _wait_until_listening

pytestmark = pytest.mark.e2e

TOKEN = "dashboard-token-0123456789"


def _start(tmp_path: Path, env: dict[str, str], command: list[str]) -> HttpServer:
    port = free_port()
    db = tmp_path / "memory.db"
    stdout_path, stderr_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [str(memstrata_exe()), *command, "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none", **env},
        )
    server = HttpServer(proc, port, db, stdout_path, stderr_path)
    _wait_until_listening(server)
    return server


def _get(server: HttpServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_without_tokens_the_loopback_dashboard_is_open_and_checks_the_host(tmp_path: Path):
    server = _start(tmp_path, {}, ["serve", "--http"])
    try:
        status, body = _get(server, "/")
        assert status == 200 and 'href="/p/e2e"' in body
        assert _get(server, "/p/e2e")[0] == 200
        # DNS rebinding: another name pointing at 127.0.0.1 cannot read the pages.
        assert _get(server, "/p/e2e", {"Host": "evil.example"})[0] == 421
        assert _get(server, "/login")[0] == 303  # nothing to sign in to
    finally:
        _, stderr = server.stop()
    assert "dashboard at http://127.0.0.1" in stderr


def test_with_tokens_pages_need_a_session_or_a_bearer_header(tmp_path: Path):
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS": TOKEN}, ["serve", "--http"])
    try:
        status, _ = _get(server, "/p/e2e")
        assert status == 303  # to the sign-in form
        assert _get(server, "/p/e2e", {"Authorization": "Bearer wrong-token-0123456789"})[0] == 303
        status, body = _get(server, "/p/e2e", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and 'e2e: <span id="total">0</span> memories' in body
    finally:
        server.stop()


def test_the_dashboard_can_be_switched_off(tmp_path: Path):
    server = _start(tmp_path, {"MEMSTRATA_HTTP_DASHBOARD": "false"}, ["serve", "--http"])
    try:
        assert _get(server, "/")[0] == 404
        assert _get(server, "/p/e2e")[0] == 404
    finally:
        _, stderr = server.stop()
    assert "dashboard at" not in stderr


def test_ui_serves_on_loopback_and_prints_the_address(tmp_path: Path):
    server = _start(tmp_path, {}, ["ui", "--no-browser"])
    try:
        assert _get(server, "/")[0] == 200
        deadline = time.monotonic() + 10
        while "dashboard at" not in server.stderr_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        _, stderr = server.stop()
    assert f"dashboard at http://127.0.0.1:{server.port}/" in stderr
    assert server.proc.returncode == 0
