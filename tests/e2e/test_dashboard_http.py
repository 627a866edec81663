"""The dashboard over plain HTTP (no browser): open on loopback without tokens, as /mcp is;
Host checks; bearer headers; switching it off; and `memstrata ui`."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from email.message import Message
from pathlib import Path

import pytest

from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.models import Layer
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import AppendItem
from memory_core.services.truth import TruthService
from server.container import open_container
from server.settings import Settings
from tests.e2e.conftest import free_port, memstrata_exe, server_env
from tests.e2e.test_http import HttpServer, _wait_until_listening
from tests.fakes import FrozenClock

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
        # A wrong bearer token is refused outright (and counted by the throttle), not sent
        # to a form a script cannot fill.
        assert _get(server, "/p/e2e", {"Authorization": "Bearer wrong-token-0123456789"})[0] == 401
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


def _post_login(server: HttpServer, cookie: str, csrf: str, token: str) -> tuple[int, str, str]:
    data = urllib.parse.urlencode({"csrf": csrf, "token": token}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/login?next=/", data=data, headers={"Cookie": cookie}
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return int(response.status), "", response.headers.get("retry-after") or ""
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(), exc.headers.get("retry-after") or ""


def _session(server: HttpServer, headers: dict[str, str] | None = None) -> tuple[str, str, str]:
    """A fresh anonymous session: its Set-Cookie header, the cookie pair, and its CSRF token."""
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/login", headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        set_cookie = response.headers["set-cookie"]
        body = response.read().decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', body)
    assert csrf is not None
    return set_cookie, set_cookie.split(";", 1)[0], csrf.group(1)


def test_failed_sign_ins_are_throttled_and_cookies_are_httponly(tmp_path: Path):
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS": TOKEN}, ["serve", "--http"])
    try:
        set_cookie, cookie, csrf = _session(server)
        assert "httponly" in set_cookie.lower() and "secure" not in set_cookie.lower()
        for _ in range(5):
            status, body, _ = _post_login(server, cookie, csrf, "wrong-token-0123456789")
            assert status == 401 and "That token is not valid." in body
        # The sixth try waits, even with the right token: nothing is checked meanwhile.
        status, body, retry_after = _post_login(server, cookie, csrf, TOKEN)
        assert status == 429 and "Too many failed sign-ins" in body
        assert 1 <= int(retry_after) <= 60
        # Secure cookies behind a TLS proxy, and X-Forwarded-* only from configured proxies:
        # tests/e2e/test_http_throttle.py.
    finally:
        _, stderr = server.stop()
    assert stderr.count('"auth.throttled"') == 1
    assert TOKEN not in stderr


async def _seed_expired(db: Path, count: int) -> None:
    """`count` memories written 40 days ago (EXPIRED now), and one fresh one."""
    written = datetime.now(UTC) - timedelta(days=40)
    settings = Settings(db=db, embedding_model="none", project="e2e")
    async with open_container(settings, FrozenClock(written)) as store:
        items = [AppendItem(layer=Layer.EPISODIC, content=f"old note {n}") for n in range(count)]
        await store.memories.append_many("e2e", items)
    async with open_container(settings) as store:
        await store.memories.append("e2e", Layer.EPISODIC, "a fresh note")


async def test_the_forgetting_page_is_paged(tmp_path: Path):
    await _seed_expired(tmp_path / "memory.db", 60)
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS": TOKEN}, ["serve", "--http"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        status, first = _get(server, "/p/e2e/forgetting", auth)
        assert status == 200 and 'data-count="60"' in first
        assert first.count("<tr data-id=") == 50 and "Delete all 60 expired memories" in first
        more = re.search(r'href="(/p/e2e/forgetting\?[^"]+)" rel="next"', first)
        assert more is not None
        status, second = _get(server, more.group(1).replace("&amp;", "&"), auth)
        assert status == 200 and second.count("<tr data-id=") == 10
        assert 'rel="next"' not in second and "First page" in second
        ids = re.findall(r'<tr data-id="(\d+)"', first + second)
        assert len(set(ids)) == 60  # no row twice, and not the fresh one
        status, body = _get(server, "/p/e2e/forgetting?after=5&at=yesterday", auth)
        assert status == 400 and "at: must be an ISO 8601 time" in body
    finally:
        server.stop()


READER = "reader-token-0123456789abcdef"


async def _seed_truth(db: Path) -> dict[str, int]:
    """A correction, an updated memory, tagged and pinned ones: the curation pages' material."""
    settings = Settings(db=db, embedding_model="none", project="e2e")
    async with open_container(settings) as store:
        memories = store.memories
        truth = TruthService(memories)
        old = await memories.append("e2e", Layer.EPISODIC, "We deploy the backend to Fly.io")
        new = await memories.append(
            "e2e", Layer.EPISODIC, "Backend deploys moved to AWS", supersedes=[old.memory.id]
        )
        edited = await memories.append("e2e", Layer.EPISODIC, "Tokens expire after 15 minutes")
        await truth.update("e2e", edited.memory.id, content="Tokens expire after 60 minutes")
        drafts = [
            (await memories.append("e2e", Layer.EPISODIC, f"draft {n}", tags=["draft"])).memory.id
            for n in range(3)
        ]
        kept = await memories.append("e2e", Layer.EPISODIC, "draft kept", tags=["draft"])
        await truth.pin("e2e", [kept.memory.id])
    return {
        "old": old.memory.id,
        "new": new.memory.id,
        "edited": edited.memory.id,
        "kept": kept.memory.id,
        **{f"draft{n}": i for n, i in enumerate(drafts)},
    }


def _signed_in(server: HttpServer, token: str) -> tuple[str, str]:
    """A signed-in session through the login form: its cookie pair and its CSRF token."""
    _, cookie, csrf = _session(server)
    status, _, headers = _post(server, "/login?next=/", cookie, {"csrf": csrf, "token": token})
    assert status == 303, status
    signed = headers["set-cookie"].split(";", 1)[0]
    status, body = _get(server, "/", {"Cookie": signed})
    found = re.search(r'name="csrf" value="([^"]+)"', body)
    assert status == 200 and found is not None
    return signed, found.group(1)


def _post(
    server: HttpServer, path: str, cookie: str, form: dict[str, str]
) -> tuple[int, str, Message]:
    """A form POST with a session cookie: status, body and headers (redirects not followed)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Cookie": cookie},
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return int(response.status), response.read().decode(), response.headers
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(), exc.headers


def _truth_server(tmp_path: Path) -> HttpServer:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(
        json.dumps(
            {
                "tokens": [
                    {"name": "admin", "token": TOKEN},
                    {"name": "reader", "token": READER, "read_only": True},
                ]
            }
        )
    )
    return _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS_FILE": str(tokens)}, ["serve", "--http"])


async def test_detail_shows_history_supersession_and_pins(tmp_path: Path):
    ids = await _seed_truth(tmp_path / "memory.db")
    server = _truth_server(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        _, body = _get(server, f"/p/e2e/memories/{ids['old']}", auth)
        assert f'Superseded by <a href="/p/e2e/memories/{ids["new"]}">#{ids["new"]}</a>' in body
        _, body = _get(server, f"/p/e2e/memories/{ids['new']}", auth)
        assert f'<li data-id="{ids["old"]}">Supersedes' in body and 'id="superseded-by"' not in body
        _, body = _get(server, f"/p/e2e/memories/{ids['edited']}", auth)
        assert "Tokens expire after 60 minutes" in body
        assert re.search(r'<tr data-version="\d+">.*Tokens expire after 15 minutes', body)
        cookie, csrf = _signed_in(server, TOKEN)
        pin = f"/p/e2e/memories/{ids['edited']}/pin"
        status, _, headers = _post(server, pin, cookie, {"csrf": csrf, "pinned": "true"})
        location = headers["location"]
        assert status == 303 and location.endswith(f"?done=pinned-{ids['edited']}")
        _, body = _get(server, location, {"Cookie": cookie})
        assert 'data-pinned="true"' in body and "Unpin</button>" in body
        assert f"Pinned memory {ids['edited']}" in body
        # Without the CSRF token, or with a read-only token, nothing changes.
        assert _post(server, pin, cookie, {"pinned": "false"})[0] == 403
        reader, reader_csrf = _signed_in(server, READER)
        status, body, _ = _post(server, pin, reader, {"csrf": reader_csrf, "pinned": "false"})
        assert status == 403 and "read-only" in body
        _, body = _get(server, f"/p/e2e/memories/{ids['edited']}", {"Cookie": reader})
        assert 'data-pinned="true"' in body and 'id="pin"' not in body
        status, _, headers = _post(server, pin, cookie, {"csrf": csrf, "pinned": "false"})
        assert status == 303 and headers["location"].endswith(f"?done=unpinned-{ids['edited']}")
        assert _post(server, pin, cookie, {"csrf": csrf, "pinned": "maybe"})[0] == 400
    finally:
        server.stop()


async def test_listing_filters_by_tag_and_marks_pins_and_supersession(tmp_path: Path):
    ids = await _seed_truth(tmp_path / "memory.db")
    server = _truth_server(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        _, body = _get(server, "/p/e2e/memories?tags=Draft", auth)
        listed = {int(i) for i in re.findall(r'<tr data-id="(\d+)"', body)}
        assert listed == {ids["draft0"], ids["draft1"], ids["draft2"], ids["kept"]}
        assert '<span class="badge pinned">pinned</span>' in body
        _, body = _get(server, "/p/e2e/memories", auth)
        assert f"superseded by #{ids['new']}" in body
        _, body = _get(server, "/p/e2e/memories?q=draft&tags=draft&mode=keyword", auth)
        assert {int(i) for i in re.findall(r'<tr data-id="(\d+)"', body)} == listed
        status, body = _get(server, "/p/e2e/memories?tags=no%20way!", auth)
        assert status == 400 and "tags[1]" in body
    finally:
        server.stop()


async def test_forget_by_filter_previews_then_deletes_with_a_receipt(tmp_path: Path):
    ids = await _seed_truth(tmp_path / "memory.db")
    server = _truth_server(tmp_path)
    drafts = sorted(ids[f"draft{n}"] for n in range(3))
    try:
        cookie, csrf = _signed_in(server, TOKEN)
        status, body = _get(server, "/p/e2e/forgetting/where", {"Cookie": cookie})
        assert status == 200 and "No filter yet" in body and 'id="preview-count"' not in body
        # Only "keep pinned" selects everything else: not a filter on its own.
        status, body = _get(server, "/p/e2e/forgetting/where?pinned=keep", {"Cookie": cookie})
        assert "No filter yet" in body
        status, body = _get(server, "/p/e2e/forgetting/where?tags=draft", {"Cookie": cookie})
        assert status == 200 and 'data-count="3"' in body  # the pinned draft is kept
        assert sorted(int(i) for i in re.findall(r'<tr data-id="(\d+)"', body)) == drafts
        shown = re.search(r'name="ids" value="([\d,]+)"', body)
        assert shown is not None and sorted(map(int, shown.group(1).split(","))) == drafts
        _, listing = _get(server, "/p/e2e/memories?tags=draft", {"Cookie": cookie})
        assert len(re.findall(r"<tr data-id=", listing)) == 4  # the preview deleted nothing
        form = {"csrf": csrf, "tags": "draft", "pinned": "keep", "ids": shown.group(1)}
        reader, reader_csrf = _signed_in(server, READER)
        refused = _post(
            server, "/p/e2e/forgetting/where/run", reader, {**form, "csrf": reader_csrf}
        )
        assert refused[0] == 403 and "read-only" in refused[1]
        status, body, _ = _post(server, "/p/e2e/forgetting/where/run", cookie, form)
        assert status == 200 and "Forgot 3 memories." in body
        assert re.search(r'data-removed="rows">3<', body)
        assert re.findall(r'data-remaining="\w+">(\d+)<', body) == ["0"] * 5
        _, listing = _get(server, "/p/e2e/memories?tags=draft", {"Cookie": cookie})
        assert [int(i) for i in re.findall(r'<tr data-id="(\d+)"', listing)] == [ids["kept"]]
        # No filter, no delete, even with ids.
        status, body, _ = _post(
            server, "/p/e2e/forgetting/where/run", cookie, {"csrf": csrf, "ids": str(ids["old"])}
        )
        assert status == 400 and "filter: is required" in body
    finally:
        server.stop()


async def _seed_ageing(db: Path) -> None:
    """4 memories 40 days old (EXPIRED), 3 used 10 minutes ago (ACTIVE), 2 six hours ago
    (RECENT), and a session whose client has not sent the summary it was asked for."""
    now = datetime.now(UTC)
    clock = FrozenClock(now - timedelta(days=40))
    settings = Settings(db=db, embedding_model="none", project="e2e")
    async with open_container(settings, clock) as store:
        memories = store.memories
        for n in range(4):
            await memories.append("e2e", Layer.EPISODIC, f"an old note {n}")
        clock.set(now - timedelta(hours=6))
        for n in range(2):
            await memories.append("e2e", Layer.EPISODIC, f"this morning's note {n}")
        clock.set(now - timedelta(minutes=10))
        for n in range(3):
            await memories.append("e2e", Layer.EPISODIC, f"a note of just now {n}")
        await seed_waiting_session(store.conversations, "e2e", "waiting")


async def seed_waiting_session(sessions: ConversationService, project: str, sid: str) -> None:
    """A session of 24 messages whose client was asked for a summary and has not sent it."""
    await sessions.start(project, sid)
    for n in range(24):
        await sessions.add_entry(
            project,
            sid,
            type=EntryType.MESSAGE,
            role=Role.USER if n % 2 == 0 else Role.ASSISTANT,
            content=f"Message {n} about the release plan and its migration steps",
        )
    asked = await sessions.compress(project, sid, source="client")
    assert asked.status == "summary_requested"


async def test_overview_tells_a_person_what_to_do_and_the_chart_shows_tiers_and_counts(
    tmp_path: Path,
):
    """Issue 35, N8: the notes name the dashboard's own pages, not MCP tools; day 0's bar is
    split into its ACTIVE and RECENT parts with their counts; a pending summary says so."""
    await _seed_ageing(tmp_path / "memory.db")
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS": TOKEN}, ["serve", "--http"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        status, body = _get(server, "/p/e2e", auth)
        assert status == 200
        note = re.search(r'<li data-code="prune_suggested">(.*?)</li>', body)
        assert note is not None
        assert "prune_expired_contexts" not in note.group(1) and "dry_run" not in note.group(1)
        assert "4 of 9 memories are EXPIRED" in note.group(1)
        assert 'href="/p/e2e/forgetting"' in note.group(1)
        day0 = re.findall(
            r'<rect class="tier-(\w+)" data-day="0" data-tier="(\w+)" data-count="(\d+)"', body
        )
        assert [(t, int(n)) for _, t, n in day0] == [("ACTIVE", 3), ("RECENT", 2)]
        assert all(css == t.lower() for css, t, _ in day0)
        counts = dict(re.findall(r'<text class="count" data-day="(\d+)"[^>]*>(\d+)</text>', body))
        assert counts == {"0": "5", "40": "4"}
        assert '<strong data-tier="ACTIVE">3</strong>' in body
        status, body = _get(server, "/p/e2e/conversations", auth)
        assert status == 200 and "Not compressed yet" not in body
        pending = re.search(r'<p class="pending" data-entries="(\d+)">(.*?)</p>', body, re.S)
        assert pending is not None and int(pending.group(1)) > 0
        assert "has not sent the summary yet" in pending.group(2)
        assert "fallback summary" in pending.group(2)
    finally:
        server.stop()
