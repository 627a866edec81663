"""`memstrata serve --http` with bearer tokens: 401, 403 outside a grant, 421, 413, isolation."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from memory_core.storage.sqlite.connection import open_database
from tests.e2e.conftest import free_port, initialize_message, memstrata_exe, ok, server_env
from tests.e2e.test_http import HttpServer, _wait_until_listening

pytestmark = pytest.mark.e2e

ADMIN = "admin-token-0123456789abcdef"
ALPHA = "alpha-token-0123456789abcdef"
BETA = "beta-token-0123456789abcdef0"
READER = "reader-token-0123456789abcdef"
TOKENS = {
    "tokens": [
        {"name": "admin", "token": ADMIN},
        {"name": "alpha", "token": ALPHA, "projects": ["alpha"]},
        {"name": "beta", "token": BETA, "projects": ["beta"]},
        {"name": "reader", "token": READER, "projects": ["alpha"], "read_only": True},
    ]
}
MAX_BODY = 64 * 1024


def _start(tmp_path: Path, extra_env: dict[str, str], args: list[str]) -> HttpServer:
    port = free_port()
    db = tmp_path / "memory.db"
    stdout_path, stderr_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
    env = {**server_env(db, project="alpha"), "MEMSTRATA_EMBEDDING_MODEL": "none", **extra_env}
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [str(memstrata_exe()), "serve", "--http", "--port", str(port), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
        )
    return HttpServer(proc, port, db, stdout_path, stderr_path)


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[HttpServer]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = _start(
        tmp_path,
        {"MEMSTRATA_AUTH_TOKENS_FILE": str(tokens), "MEMSTRATA_HTTP_MAX_BODY_BYTES": str(MAX_BODY)},
        ["--host", "127.0.0.1"],
    )
    try:
        _wait_until_listening(server)
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def _client(server: HttpServer, token: str) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(server.url, http_client=http)) as client:
        yield client


def _post(server: HttpServer, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        server.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def _call(tool: str, arguments: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return json.dumps(message).encode()


def test_no_token_or_a_wrong_token_is_401(auth_server: HttpServer):
    body = json.dumps(initialize_message("auth-check")).encode()
    assert _post(auth_server, body, {})[0] == 401
    assert _post(auth_server, body, {"Authorization": "Bearer not-a-known-token-at-all"})[0] == 401
    assert _post(auth_server, body, {"Authorization": f"Bearer {ADMIN}"})[0] == 200


def test_foreign_host_header_is_421_even_with_a_token(auth_server: HttpServer):
    body = json.dumps(initialize_message("auth-check")).encode()
    auth = {"Authorization": f"Bearer {ADMIN}"}
    assert _post(auth_server, body, {**auth, "Host": "evil.example"})[0] == 421


def test_oversized_body_is_413(auth_server: HttpServer):
    huge = _call("append", {"layer": "episodic", "content": "x" * (MAX_BODY + 1)})
    status, body = _post(auth_server, huge, {"Authorization": f"Bearer {ADMIN}"})
    assert status == 413
    # A JSON-RPC error (the request id is unknown before the body is read; clients use their
    # own), whose message names the limit, the request's size and the setting.
    error = json.loads(body)
    assert error["id"] is None and error["error"]["code"] == -32600
    assert f"up to {MAX_BODY:,} bytes (MEMSTRATA_HTTP_MAX_BODY_BYTES)" in error["error"]["message"]
    assert f"of {len(huge):,} bytes" in error["error"]["message"]


async def test_the_sdk_client_shows_the_size_limit_and_goes_on(auth_server: HttpServer):
    async with _client(auth_server, ADMIN) as admin:
        # A long document (within the tool's own limit, past the body limit).
        text = "A paragraph of the onboarding handbook.\n" * (MAX_BODY // 40 + 10)
        with pytest.raises(MCPError) as caught:
            await admin.call_tool(
                "ingest_document", {"tenant": "acme", "source": "handbook.md", "text": text}
            )
        assert caught.value.error.code == -32600
        assert f"up to {MAX_BODY:,} bytes" in str(caught.value)
        assert "Server returned an error response" not in str(caught.value)
        stats = ok(await admin.call_tool("get_memory_stats", {"project": "alpha"}))
        assert stats["total"] == 0


def test_calls_outside_the_grant_are_403_and_logged(auth_server: HttpServer):
    alpha = {"Authorization": f"Bearer {ALPHA}"}
    reader = {"Authorization": f"Bearer {READER}"}
    other = _call("search", {"query": "anything", "project": "beta"})
    status, body = _post(auth_server, other, alpha)
    assert status == 403
    assert "outside this token's grant" in json.loads(body)["error"]["message"]
    # Omitting `project` means the default project (alpha here), which alpha may use; a tool
    # whose omitted project means every project must name one.
    everything = _call("recalculate_memory_tiers", {})
    assert _post(auth_server, everything, alpha)[0] == 403
    # A read-only token cannot write, even in its own project.
    write = _call("append", {"layer": "episodic", "content": "nope", "project": "alpha"})
    assert _post(auth_server, write, reader)[0] == 403
    resource = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "resources/read",
            "params": {"uri": "memory://beta/stats"},
        }
    ).encode()
    assert _post(auth_server, resource, alpha)[0] == 403
    # Tenant- and user-scoped tools cannot be limited by project, so such a token is refused.
    tenant = _call("search_business_context", {"tenant": "acme", "query": "pricing"})
    assert _post(auth_server, tenant, alpha)[0] == 403

    _, stderr = auth_server.stop()
    refusals = [
        json.loads(line)
        for line in stderr.splitlines()
        if line.startswith("{") and '"auth.refused"' in line
    ]
    assert {r["client"] for r in refusals} == {"alpha", "reader"}
    assert len(refusals) == 5
    for secret in (ADMIN, ALPHA, BETA, READER):
        assert secret not in stderr


async def test_no_project_sees_another_projects_data(auth_server: HttpServer):
    async with _client(auth_server, ALPHA) as alpha:
        ok(await alpha.call_tool("append", {"layer": "episodic", "content": "alpha launch codes"}))
    async with _client(auth_server, BETA) as beta:
        ok(
            await beta.call_tool(
                "append", {"layer": "episodic", "content": "beta launch codes", "project": "beta"}
            )
        )
        mine = ok(await beta.call_tool("search", {"query": "launch codes", "project": "beta"}))
        assert [h["content"] for h in mine["hits"]] == ["beta launch codes"]
        with pytest.raises(Exception, match=r"outside this token.s grant"):
            await beta.call_tool("search", {"query": "launch codes", "project": "alpha"})
    async with _client(auth_server, READER) as reader:
        seen = ok(await reader.call_tool("search", {"query": "launch codes"}))
        assert [h["content"] for h in seen["hits"]] == ["alpha launch codes"]
        stats = ok(await reader.call_tool("get_memory_stats", {"project": "alpha"}))
        assert stats["total"] == 1
    async with _client(auth_server, ADMIN) as admin:
        everything = ok(await admin.call_tool("search", {"query": "launch", "project": "beta"}))
        assert len(everything["hits"]) == 1


async def _uses(server: HttpServer) -> dict[str, tuple[int, str | None]]:
    """Each memory's (access_count, last_accessed), read from the store's file."""
    db = await open_database(server.db)
    try:
        query = "SELECT content, access_count, last_accessed FROM context_snapshots"
        rows = await db.execute_fetchall(query)
    finally:
        await db.close()
    return {str(content): (int(count), last) for content, count, last in rows}


async def test_a_read_only_token_leaves_no_mark_of_use(auth_server: HttpServer):
    async with _client(auth_server, ADMIN) as admin:
        ok(await admin.call_tool("append", {"layer": "episodic", "content": "alpha release notes"}))
        ok(await admin.call_tool("learn", {"key": "release day", "value": "Thursday"}))
    unused = await _uses(auth_server)
    assert {count for count, _ in unused.values()} == {0}
    async with _client(auth_server, READER) as reader:
        found = ok(await reader.call_tool("search", {"query": "release notes"}))
        assert [h["content"] for h in found["hits"]][:1] == ["alpha release notes"]
        ok(await reader.call_tool("recall", {"key": "release day"}))
        ok(await reader.call_tool("load_context", {}))
    # Reading with a read-only token is not using: nothing ages more slowly for it.
    assert await _uses(auth_server) == unused
    async with _client(auth_server, ADMIN) as admin:
        ok(await admin.call_tool("search", {"query": "release notes"}))
    used = (await _uses(auth_server))["alpha release notes"]
    assert used[0] == 1 and used[1] is not None


def test_refuses_a_public_address_without_tokens(tmp_path: Path):
    server = _start(tmp_path, {}, ["--host", "0.0.0.0"])
    try:
        assert server.proc.wait(timeout=30) != 0
    finally:
        _, stderr = server.stop()
    assert "without authentication" in stderr
    assert "--insecure" in stderr


def test_a_token_shorter_than_16_characters_is_refused_at_start(tmp_path: Path):
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS": "short"}, ["--host", "127.0.0.1"])
    try:
        assert server.proc.wait(timeout=30) != 0
    finally:
        _, stderr = server.stop()
    assert "shorter than 16" in stderr
    assert "Traceback" not in stderr


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")  # pragma: no cover - Linux always reports it


FLOOD = 3_000


def test_a_session_flood_by_one_token_locks_nobody_out(auth_server: HttpServer):
    """A read-only token scoped to one project opens thousands of sessions; others still get in.

    The server is stateless over HTTP: an `initialize` leaves nothing behind, so there is no
    session table to fill (the SDK's stateful default refused everyone once one client had
    opened 10,000) and memory does not grow with the flood.
    """
    body = json.dumps(initialize_message("flood")).encode()
    headers = {
        "Authorization": f"Bearer {READER}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def initialize() -> str | None:
        request = urllib.request.Request(auth_server.url, data=body, method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            response.read()
            session: str | None = response.headers.get("mcp-session-id")
            return session

    initialize()
    before = _rss_kb(auth_server.proc.pid)
    session_ids = {initialize() for _ in range(FLOOD)}
    grown_mb = (_rss_kb(auth_server.proc.pid) - before) / 1024
    assert session_ids == {None}  # no session was opened to be kept
    assert grown_mb < 50, f"server grew {grown_mb:.0f} MB over {FLOOD} initialize requests"
    for token in (ADMIN, ALPHA):
        status, _ = _post(
            auth_server,
            json.dumps(initialize_message("after")).encode(),
            {"Authorization": f"Bearer {token}"},
        )
        assert status == 200


async def test_tools_work_for_every_token_after_a_flood_through_the_sdk_client(
    auth_server: HttpServer,
):
    async with _client(auth_server, ALPHA) as client:
        stored = ok(await client.call_tool("append", {"layer": "episodic", "content": "x"}))
        found = ok(await client.call_tool("search", {"query": "x"}))
    assert found["hits"][0]["id"] == stored["id"]
