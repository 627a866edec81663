"""`serve --http`: every failed token counts against the socket's address, whatever it claims.

A wrong token in the dashboard's sign-in form, a wrong bearer token on a page and one on /mcp
all count against one throttle per client address; once it holds, every attempt from that
address gets 429 with Retry-After (the right token too). The address is the socket peer's:
X-Forwarded-For is believed only from proxies named in MEMSTRATA_HTTP_TRUSTED_PROXIES.
Every loop here is bounded by the throttle's limit (5 failures).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import initialize_message
from tests.e2e.test_http import HttpServer, _wait_until_listening
from tests.e2e.test_http_auth import ADMIN, TOKENS, _client, _start

pytestmark = pytest.mark.e2e

LIMIT = 5  # failures before an address waits (server.http.throttle.AuthThrottle)
WRONG = "not-a-known-token-0123456789"
INIT = json.dumps(initialize_message("throttle-check")).encode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _send(
    server: HttpServer,
    path: str,
    headers: dict[str, str],
    data: bytes | None = None,
) -> tuple[int, str, dict[str, str]]:
    """Status, body and headers of one request (no redirect followed)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", data=data, headers=headers
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return int(response.status), response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(), dict(exc.headers)


def _mcp(server: HttpServer, headers: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    mcp_headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **headers,
    }
    return _send(server, "/mcp", mcp_headers, INIT)


def _bearer(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


def _sign_in(server: HttpServer, token: str, headers: dict[str, str] | None = None) -> int:
    """Post the sign-in form of a fresh session; the status."""
    status, body, got = _send(server, "/login", headers or {})
    assert status == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', body)
    assert csrf is not None
    cookie = got["set-cookie"].split(";", 1)[0]
    form = urllib.parse.urlencode({"csrf": csrf.group(1), "token": token}).encode()
    return _send(server, "/login?next=/", {**(headers or {}), "Cookie": cookie}, form)[0]


def _held(status: int, headers: dict[str, str]) -> bool:
    return status == 429 and 1 <= int(headers.get("retry-after", "0")) <= 60


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[HttpServer]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS_FILE": str(tokens)}, ["--host", "127.0.0.1"])
    try:
        _wait_until_listening(server)
        yield server
    finally:
        server.stop()


def test_a_forwarded_for_header_does_not_take_a_client_out_of_its_throttle(guarded: HttpServer):
    for n in range(LIMIT):
        # Each try claims another address: none is believed (no trusted proxy is configured).
        assert _sign_in(guarded, WRONG, {"X-Forwarded-For": f"203.0.113.{n}"}) == 401
    fresh = {"X-Forwarded-For": "198.51.100.7"}
    assert _sign_in(guarded, ADMIN, fresh) == 429
    status, body, headers = _mcp(guarded, _bearer(ADMIN, **fresh))
    assert _held(status, headers)
    assert json.loads(body)["error"]["message"].startswith("Too many failed authentications")
    # Nor does X-Forwarded-Proto make a plain-HTTP session's cookie Secure.
    status, _, headers = _send(guarded, "/login", {"X-Forwarded-Proto": "https"})
    assert status == 200 and "secure" not in headers["set-cookie"].lower()


async def test_wrong_bearer_tokens_on_mcp_and_on_pages_count_too(guarded: HttpServer):
    for _ in range(3):
        assert _mcp(guarded, _bearer(WRONG))[0] == 401
    for _ in range(LIMIT - 3):
        status, body, _ = _send(guarded, "/p/alpha", _bearer(WRONG))
        assert status == 401 and "That token is not valid." in body
    # Held back everywhere now, the right token included: a guess cannot go on elsewhere.
    status, body, headers = _mcp(guarded, _bearer(ADMIN))
    assert _held(status, headers)
    assert json.loads(body)["error"]["code"] == -32029
    assert _held(*_send(guarded, "/p/alpha", _bearer(ADMIN))[::2])
    assert _sign_in(guarded, ADMIN) == 429
    # The SDK client shows why, not "Server returned an error response".
    held_back = r"Too many failed authentications .*: try again in \d+ s\."
    with pytest.RaisesGroup(pytest.RaisesExc(MCPError, match=held_back), flatten_subgroups=True):
        async with _client(guarded, ADMIN):
            pass
    # No token at all is no guess: still the plain 401 that starts an auth flow.
    assert _mcp(guarded, {})[0] == 401

    _, stderr = guarded.stop()
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert [e["path"] for e in lines if e["event"] == "auth.failed"] == ["/mcp"] * 3 + [
        "/p/alpha"
    ] * (LIMIT - 3)
    # The hold is logged once, not once per refused attempt.
    assert [e["client_address"] for e in lines if e["event"] == "auth.throttled"] == ["127.0.0.1"]
    assert ADMIN not in stderr and WRONG not in stderr


def test_forwarded_headers_are_believed_from_a_configured_proxy(tmp_path: Path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    env = {
        "MEMSTRATA_AUTH_TOKENS_FILE": str(tokens),
        "MEMSTRATA_HTTP_TRUSTED_PROXIES": "127.0.0.1",
    }
    server = _start(tmp_path, env, ["--host", "127.0.0.1"])
    try:
        _wait_until_listening(server)
        guesser = {"X-Forwarded-For": "203.0.113.9"}
        for _ in range(LIMIT):
            assert _mcp(server, _bearer(WRONG, **guesser))[0] == 401
        assert _held(*_mcp(server, _bearer(ADMIN, **guesser))[::2])
        # Another client behind the same proxy is not held back.
        assert _mcp(server, _bearer(ADMIN, **{"X-Forwarded-For": "198.51.100.7"}))[0] == 200
        # The proxy's X-Forwarded-Proto is believed: behind TLS the cookie is Secure.
        status, _, headers = _send(server, "/login", {"X-Forwarded-Proto": "https"})
        assert status == 200 and "secure" in headers["set-cookie"].lower()
    finally:
        _, stderr = server.stop()
    held = [json.loads(line) for line in stderr.splitlines() if '"auth.throttled"' in line]
    assert [e["client_address"] for e in held] == ["203.0.113.9"]
