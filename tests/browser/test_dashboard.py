"""The dashboard in headless Chromium against a real `memstrata serve --http` process.

The database is seeded through the services (back-dated with a frozen clock, so some memories
are EXPIRED, some ARCHIVED, RECENT and ACTIVE), then the server runs on it with bearer tokens:
an admin, one limited to project alpha, one to beta, and a read-only one. What the pages show
is checked against the MCP tools' own answers over the same server. Each page's screenshot
goes to $MEMSTRATA_SCREENSHOTS (`make browser`: docs/screenshots/, which the README shows), else
to a temporary folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.models import Layer
from server.container import open_container
from server.settings import Settings
from tests.e2e.conftest import free_port, memstrata_exe, ok, server_env
from tests.e2e.test_dashboard_http import seed_waiting_session
from tests.e2e.test_http import HttpServer, _wait_until_listening
from tests.e2e.test_http_auth import _client
from tests.fakes import FrozenClock

pytestmark = pytest.mark.e2e

T = TypeVar("T")

# `make browser` sets MEMSTRATA_SCREENSHOTS to docs/screenshots (the README shows them); any
# other run keeps its screenshots out of the checkout, so `make test` leaves no file changed.
SHOTS = Path(
    os.environ.get("MEMSTRATA_SCREENSHOTS") or Path(tempfile.gettempdir()) / "memstrata-screenshots"
)
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
BETA_MARKER = "zanzibar"  # only in project beta's memories

EPISODES = [
    "Deployed release 2.3 to staging; the migration took 4 minutes",
    "The nightly backup failed because the disk was full",
    "Rotated the database credentials after the audit",
    "Customer reported slow search on large projects",
    "Benchmarked hybrid search at 100k memories: 14 ms median",
    "Paired with Sam on the prune batching change",
    "Release 2.4 shipped with the dashboard preview",
    "Incident: the scheduler ran twice on two replicas",
    "Retro: keep migrations forward-only",
    "Reviewed the pull request for keyword prefix search",
    "Wrote the runbook for restoring a backup",
    "The staging database was restored from last night's backup",
]
FACTS = {
    "deploy.command": "make deploy ENV=staging, then make smoke",
    "database.engine": "SQLite with sqlite-vec; PostgreSQL for replicas",
    "backup.schedule": "Nightly at 02:00 UTC, kept for 14 days",
    "team.oncall": "Sam this week, Ana next week",
    "style.commits": "Small commits whose message says what and why",
}
RULES = {
    "before deploying": "run the smoke tests and check the migration plan",
    "when a backup fails": "free disk space first, then rerun the backup job",
}


async def _seed(db: Path) -> None:
    """Memories of every tier in alpha (and a few in beta), and one compressed session."""
    now = datetime.now(UTC)
    clock = FrozenClock(now - timedelta(days=45))
    settings = Settings(db=db, embedding_model="none", project="alpha")
    async with open_container(settings, clock) as c:
        memories = c.memories
        for text in EPISODES[:6]:  # 45-40 days ago: EXPIRED
            await memories.append("alpha", Layer.EPISODIC, text)
            clock.advance(days=1)
        clock.set(now - timedelta(days=12))  # ARCHIVED
        for text in EPISODES[6:]:
            await memories.append("alpha", Layer.EPISODIC, text)
            clock.advance(hours=20)
        clock.set(now - timedelta(hours=6))  # RECENT
        for key, value in FACTS.items():
            await memories.learn("alpha", key, value)
        clock.set(now - timedelta(minutes=5))  # ACTIVE
        for condition, action in RULES.items():
            await memories.append("alpha", Layer.PROCEDURAL, action, key=condition)
        for n in range(3):
            await memories.append(
                "alpha", Layer.WORKING, f"draft step {n} of the deploy plan", session_id="deploy-42"
            )
        for n in range(4):
            await memories.append("beta", Layer.EPISODIC, f"{BETA_MARKER} beta note {n}")
        sessions = c.conversations
        await sessions.start("alpha", "planning-session")
        for n in range(24):
            role = Role.USER if n % 2 == 0 else Role.ASSISTANT
            await sessions.add_entry(
                "alpha",
                "planning-session",
                type=EntryType.MESSAGE,
                role=role,
                content=f"Message {n} about planning the 2.5 release and its migration",
            )
        await sessions.compress("alpha", "planning-session", source="fallback")
        await sessions.cache_put(
            "alpha", "planning-session", "search", {"query": "release plan"}, {"hits": 3}, 5
        )
        await sessions.finalize_exchange(
            "alpha", "planning-session", "What ships in 2.5?", "The dashboard and pinning."
        )
        await seed_waiting_session(sessions, "alpha", "waiting-session")


def _start(tmp_path: Path, env: dict[str, str]) -> HttpServer:
    port = free_port()
    db = tmp_path / "memory.db"
    stdout_path, stderr_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [str(memstrata_exe()), "serve", "--http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**server_env(db, project="alpha"), **env},
        )
    server = HttpServer(proc, port, db, stdout_path, stderr_path)
    _wait_until_listening(server)
    return server


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to the end in a thread of its own.

    Playwright's sync API keeps its event loop marked running in this thread, where
    asyncio.run() refuses to start another.
    """
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _running(tmp_path: Path, env: dict[str, str]) -> Iterator[HttpServer]:
    _run(lambda: _seed(tmp_path / "memory.db"))
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS_FILE": str(tokens), **env})
    try:
        yield server
    finally:
        _, stderr = server.stop()
        assert "Traceback" not in stderr, stderr


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """A server with the real embedding model (search shows vector ranks once backfilled)."""
    yield from _running(tmp_path_factory.mktemp("dashboard"), {})


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[HttpServer]:
    """A server of its own, for a test that deletes (keyword search only: faster start)."""
    yield from _running(tmp_path, {"MEMSTRATA_EMBEDDING_MODEL": "none"})


def _tool(server: HttpServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        async with _client(server, ADMIN) as client:
            return ok(await client.call_tool(name, arguments))

    return _run(call)


def _base(server: HttpServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def _page(browser: Any, server: HttpServer, token: str) -> Any:
    """A new browser context signed in with `token` through the login form."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(_base(server) + "/p/alpha")
    assert page.url.startswith(_base(server) + "/login")
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(_base(server) + "/p/alpha")
    return page


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def _ids(page: Any, table: str) -> list[int]:
    return [
        int(x)
        for x in page.locator(f"{table} tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.id)"
        )
    ]


def test_login_page_asks_for_a_token_and_refuses_a_wrong_one(browser: Any, dashboard: HttpServer):
    page = browser.new_context(viewport={"width": 1280, "height": 600}).new_page()
    page.goto(_base(dashboard) + "/")
    assert "/login" in page.url
    _shot(page, "login.png")
    page.get_by_label("Access token").fill("not-a-token-of-this-server")
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_role("alert").inner_text() == "That token is not valid."
    cookie = next(c for c in page.context.cookies() if c["name"] == "memstrata_dashboard")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert ADMIN not in cookie["value"] and "admin" not in page.content().lower()


def test_overview_numbers_match_get_memory_stats(browser: Any, dashboard: HttpServer):
    stats = _tool(dashboard, "get_memory_stats", {"project": "alpha"})
    page = _page(browser, dashboard, ADMIN)
    # The vectors are backfilled at start-up; the overview says when all are in.
    for _ in range(100):
        if "(100%)" in page.locator("#coverage").inner_text():
            break
        page.wait_for_timeout(200)
        page.reload()
    assert int(page.locator("#total").inner_text()) == stats["total"]
    for tier, n in stats["by_tier"].items():
        assert int(page.locator(f'#by-tier td[data-tier="{tier}"]').inner_text()) == n
    for layer, n in stats["by_layer"].items():
        assert int(page.locator(f'#by-layer td[data-layer="{layer}"]').inner_text()) == n
    assert all(stats["by_tier"][t] > 0 for t in ("ACTIVE", "RECENT", "ARCHIVED", "EXPIRED"))
    assert page.locator("svg.chart rect").count() > 4
    # Day 0 holds the ACTIVE memories (used minutes ago) under the RECENT ones, each part with
    # the tools' count, and every day with memories has its count written above its bar.
    day0 = page.locator('#ages rect[data-day="0"]')
    assert [
        (day0.nth(i).get_attribute("data-tier"), int(day0.nth(i).get_attribute("data-count")))
        for i in range(day0.count())
    ] == [("ACTIVE", stats["by_tier"]["ACTIVE"]), ("RECENT", stats["by_tier"]["RECENT"])]
    labels = page.locator("#ages text.count")
    assert labels.count() > 3 and labels.first.is_visible()
    assert int(page.locator('#ages text.count[data-day="0"]').text_content() or "") == (
        stats["by_tier"]["ACTIVE"] + stats["by_tier"]["RECENT"]
    )
    for tier, n in stats["by_tier"].items():
        assert int(page.locator(f'#age-legend strong[data-tier="{tier}"]').inner_text()) == n
    assert page.get_by_role("table").filter(has_text="recalculate_tiers").count() == 1
    _shot(page, "overview.png")
    # The prune note says what to do here (no MCP tool to call) and links to where it is done.
    note = page.locator('li[data-code="prune_suggested"]')
    assert "prune_expired_contexts" not in note.inner_text()
    note.get_by_role("link").click()
    page.wait_for_url(_base(dashboard) + "/p/alpha/forgetting")
    assert page.locator("#run-prune").is_visible()
    page.go_back()
    # Keyboard: the first Tab reaches the skip link, which moves focus to the content.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") in ("A", "BUTTON", "INPUT")


def test_search_shows_each_hits_signals(browser: Any, dashboard: HttpServer):
    page = _page(browser, dashboard, ADMIN)
    page.get_by_role("link", name="Memories").click()
    _shot(page, "memories.png")
    page.get_by_label("Search text").fill("database backup")
    page.get_by_role("button", name="Show").click()
    rows = page.locator("#hits tbody tr")
    assert rows.count() >= 3
    first = rows.first
    for signal in ("bm25_rank", "vector_rank", "tier_boost", "recency", "score"):
        assert first.locator(f'td[data-signal="{signal}"]').count() == 1
    keyword_ranks = page.locator('#hits td[data-signal="bm25_rank"]').all_inner_texts()
    assert "1" in keyword_ranks
    vector_ranks = page.locator('#hits td[data-signal="vector_rank"]').all_inner_texts()
    assert any(r.isdigit() for r in vector_ranks), vector_ranks
    for header in ("Keyword rank", "Vector rank", "Tier boost", "Recency", "Session lift"):
        assert page.get_by_role("columnheader", name=header).count() == 1
    _shot(page, "search.png")
    # Looking is not using: the hits' access counts did not move.
    hit = int(first.get_attribute("data-id") or 0)
    first.get_by_role("link").click()
    assert page.locator("#access-count").inner_text() == "0"
    _shot(page, "memory.png")
    assert _tool(dashboard, "get_memory_stats", {"project": "alpha"})["by_tier"]["EXPIRED"] > 0
    assert hit > 0
    # Each hit's match strength is the one the search tool gives it (issue 35, N6).
    page.go_back()
    shown = dict(
        zip(
            [int(i or 0) for i in rows.evaluate_all("rs => rs.map(r => r.dataset.id)")],
            page.locator('#hits td[data-signal="match"]').all_inner_texts(),
            strict=True,
        )
    )
    found = _tool(
        dashboard,
        "search",
        {"query": "database backup", "project": "alpha", "limit": 20},
    )
    told = {h["id"]: h["match"] for h in found["hits"]}
    assert set(shown.values()) <= {"strong", "partial", "weak"}
    assert len(set(shown) & set(told)) >= 3
    assert {i: m for i, m in shown.items() if i in told} == {
        i: m for i, m in told.items() if i in shown
    }


def test_browse_filters_by_tier_and_session(browser: Any, dashboard: HttpServer):
    page = _page(browser, dashboard, ADMIN)
    page.goto(_base(dashboard) + "/p/alpha/memories?tier=EXPIRED")
    stats = _tool(dashboard, "get_memory_stats", {"project": "alpha"})
    assert len(_ids(page, "#memories")) == stats["by_tier"]["EXPIRED"]
    # The tier column is the tier now (as the filter), not the stored one.
    tiers = page.locator("#memories tbody td:nth-child(4)").all_inner_texts()
    assert {t.strip() for t in tiers} == {"EXPIRED"}
    page.goto(_base(dashboard) + "/p/alpha/memories?session=deploy-42")
    assert len(_ids(page, "#memories")) == 3
    page.goto(_base(dashboard) + "/p/alpha/memories?tier=SOMETIMES")
    assert "tier: must be one of ACTIVE, RECENT, ARCHIVED, EXPIRED" in page.content()


def test_conversations_show_summaries_and_the_cache(browser: Any, dashboard: HttpServer):
    page = _page(browser, dashboard, ADMIN)
    page.get_by_role("link", name="Conversations").click()
    assert "planning-session" in page.content()
    assert page.locator("table.cache td[data-remaining]").count() == 1
    # The session whose summary the client still owes says so, not "Not compressed yet".
    assert "Not compressed yet" not in page.content()
    waiting = page.locator("section.session").filter(has_text="waiting-session")
    assert "Summary pending" in waiting.locator("p.pending").inner_text()
    # The memory-state view of issue 36, the same text the session resource reads.
    planning = page.locator("section.session").filter(has_text="planning-session")
    planning.locator("details.state-view summary").click()
    view = planning.locator("details.state-view pre").inner_text()
    assert view.startswith("Session: planning-session | Project: alpha | Exchanges: ")
    assert "What get_session_context hands the model now" in view

    async def resource() -> str:
        async with _client(dashboard, ADMIN) as client:
            read = await client.read_resource("memory://alpha/session/planning-session")
            return str(read.contents[0].text)  # type: ignore[union-attr]

    assert _run(resource).splitlines()[:3] == view.splitlines()[:3]
    _shot(page, "conversations.png")


def test_prune_preview_is_the_dry_run_and_running_it_deletes_those(browser: Any, fresh: HttpServer):
    dry = _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})
    assert len(dry["ids"]) == 6
    page = _page(browser, fresh, ADMIN)
    page.get_by_role("link", name="Forgetting").click()
    # The same rows (the page lists them oldest use first; an unlimited prune deletes them all).
    assert sorted(_ids(page, "#prune")) == sorted(dry["ids"])
    _shot(page, "forgetting.png")
    before = _tool(fresh, "get_memory_stats", {"project": "alpha"})["total"]
    page.get_by_role("button", name=re.compile("Delete these 6 memories")).click()
    assert page.get_by_role("status").inner_text() == "Deleted 6 expired memories."
    after = _tool(fresh, "get_memory_stats", {"project": "alpha"})
    assert after["total"] == before - 6 and after["by_tier"]["EXPIRED"] == 0
    for memory_id in dry["ids"]:
        page.goto(_base(fresh) + f"/p/alpha/memories/{memory_id}")
        assert page.get_by_role("alert").inner_text() == "No such memory."
    assert (
        _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})["ids"] == []
    )


def test_forget_one_memory(browser: Any, fresh: HttpServer):
    page = _page(browser, fresh, ADMIN)
    page.goto(_base(fresh) + "/p/alpha/memories")
    victim = _ids(page, "#memories")[0]
    page.goto(_base(fresh) + f"/p/alpha/memories/{victim}")
    page.get_by_role("button", name="Forget this memory").click()
    assert page.get_by_role("status").inner_text() == f"Forgot memory {victim}."
    assert victim not in _ids(page, "#memories")


def test_a_project_token_sees_only_its_project(browser: Any, dashboard: HttpServer):
    page = _page(browser, dashboard, ALPHA)
    page.goto(_base(dashboard) + "/")
    assert page.get_by_role("link", name="alpha").count() == 1
    assert page.get_by_role("link", name="beta").count() == 0
    page.goto(_base(dashboard) + "/p/alpha/memories?tier=EXPIRED")
    assert BETA_MARKER not in page.content()
    beta_ids = [
        h["id"]
        for h in _tool(dashboard, "search", {"project": "beta", "query": BETA_MARKER})["hits"]
    ]
    for path in (
        "/p/beta",
        "/p/beta/memories",
        f"/p/beta/memories/{beta_ids[0]}",
        "/p/beta/forgetting",
        "/p/beta/conversations",
        f"/p/beta/memories?q={BETA_MARKER}",
    ):
        response = page.goto(_base(dashboard) + path)
        assert response is not None and response.status == 403, path
        assert BETA_MARKER not in page.content()
    _shot(page, "refused.png")
    # A beta id under alpha's name is not found: ids do not cross projects.
    response = page.goto(_base(dashboard) + f"/p/alpha/memories/{beta_ids[0]}")
    assert response is not None and response.status == 404


def test_a_post_without_the_csrf_token_is_refused(browser: Any, fresh: HttpServer):
    page = _page(browser, fresh, ADMIN)
    dry = _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})
    prune = _base(fresh) + "/p/alpha/forgetting/prune"
    forget = _base(fresh) + f"/p/alpha/memories/{dry['ids'][0]}/forget"
    # The page's own request context carries the session cookie, as a forged form would.
    for url, form in ((prune, {}), (prune, {"csrf": "guessed"}), (forget, {"csrf": ""})):
        response = page.request.post(url, form=form, max_redirects=0)
        assert response.status == 403, url
        assert "did not come from this dashboard" in response.text()
    after = _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})
    assert after["ids"] == dry["ids"]


def test_a_read_only_token_cannot_change_anything(browser: Any, fresh: HttpServer):
    page = _page(browser, fresh, READER)
    page.get_by_role("link", name="Forgetting").click()
    assert page.get_by_role("button", name=re.compile("Delete these")).count() == 0
    dry = _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})
    page.goto(_base(fresh) + f"/p/alpha/memories/{dry['ids'][0]}")
    assert page.get_by_role("button", name="Forget this memory").count() == 0
    # Even with this session's valid CSRF token, the POSTs are refused.
    csrf = page.locator('form[action="/logout"] input[name="csrf"]').get_attribute("value")
    for url in (
        _base(fresh) + "/p/alpha/forgetting/prune",
        _base(fresh) + f"/p/alpha/memories/{dry['ids'][0]}/forget",
    ):
        response = page.request.post(url, form={"csrf": csrf or ""}, max_redirects=0)
        assert response.status == 403, url
        assert "read-only" in response.text()
    after = _tool(fresh, "prune_expired_contexts", {"project": "alpha", "dry_run": True})
    assert after["ids"] == dry["ids"]


def _csrf(page: Any) -> str:
    return page.locator('form[action="/logout"] input[name="csrf"]').get_attribute("value") or ""


def test_the_memory_page_pins_and_shows_history_and_supersession(browser: Any, fresh: HttpServer):
    old = _tool(fresh, "append", {"layer": "episodic", "content": "We deploy the API to Fly.io"})
    new = _tool(
        fresh,
        "append",
        {"layer": "episodic", "content": "API deploys moved to AWS", "supersedes": [old["id"]]},
    )
    _tool(fresh, "update", {"id": new["id"], "content": "API deploys moved to AWS in March"})
    page = _page(browser, fresh, ADMIN)
    page.goto(_base(fresh) + f"/p/alpha/memories/{old['id']}")
    assert page.locator("#superseded-by").inner_text().startswith(f"Superseded by #{new['id']}")
    page.locator("#superseded-by").get_by_role("link").click()
    assert page.url.endswith(f"/p/alpha/memories/{new['id']}")
    assert page.locator("#content").inner_text() == "API deploys moved to AWS in March"
    assert page.locator("#supersedes li").first.get_attribute("data-id") == str(old["id"])
    history = _tool(fresh, "history", {"id": new["id"]})["versions"]
    rows = page.locator("#history tbody tr td.text").all_inner_texts()
    assert rows == [v["content"] for v in reversed(history)] == ["API deploys moved to AWS"]
    _shot(page, "memory-history.png")

    page.get_by_role("button", name="Pin", exact=True).click()
    assert page.get_by_role("status").inner_text().startswith(f"Pinned memory {new['id']}")
    assert page.locator("#pinned").get_attribute("data-pinned") == "true"
    listed = _tool(fresh, "list_memories", {"pinned": True, "project": "alpha"})["memories"]
    assert [m["id"] for m in listed] == [new["id"]]
    page.get_by_role("button", name="Unpin").click()
    assert page.locator("#pinned").get_attribute("data-pinned") == "false"
    assert "memories" not in _tool(fresh, "list_memories", {"pinned": True, "project": "alpha"})

    # A read-only token sees the history but no pin button, and its POST is refused.
    reader = _page(browser, fresh, READER)
    reader.goto(_base(fresh) + f"/p/alpha/memories/{new['id']}")
    assert reader.locator("#history tbody tr").count() == 1
    assert reader.get_by_role("button", name="Pin", exact=True).count() == 0
    url = _base(fresh) + f"/p/alpha/memories/{new['id']}/pin"
    response = reader.request.post(
        url, form={"csrf": _csrf(reader), "pinned": "true"}, max_redirects=0
    )
    assert response.status == 403 and "read-only" in response.text()
    assert "memories" not in _tool(fresh, "list_memories", {"pinned": True, "project": "alpha"})


def test_tag_filters_and_forget_by_filter_with_preview_and_receipt(browser: Any, fresh: HttpServer):
    tagged = [
        _tool(fresh, "append", {"layer": "episodic", "content": text, "tags": tags})["id"]
        for text, tags in (
            ("Old deploy checklist, first draft", ["draft", "deploy"]),
            ("Old deploy checklist, second draft", ["draft"]),
            ("The deploy checklist everyone uses", ["deploy"]),
        )
    ]
    keep = _tool(
        fresh, "append", {"layer": "episodic", "content": "Pinned draft", "tags": ["draft"]}
    )
    _tool(fresh, "pin", {"ids": [keep["id"]]})
    page = _page(browser, fresh, ADMIN)
    page.get_by_role("link", name="Memories").click()
    page.get_by_label("Tags (all of)").fill("draft")
    page.get_by_role("button", name="Show").click()
    assert sorted(_ids(page, "#memories")) == sorted([*tagged[:2], keep["id"]])
    assert page.locator("#memories .badge.pinned").count() == 1
    page.get_by_label("Search text").fill("deploy checklist")
    page.get_by_label("Search mode").select_option("keyword")
    page.get_by_label("Tags (all of)").fill("deploy, draft")
    page.get_by_role("button", name="Show").click()
    assert _ids(page, "#hits") == [tagged[0]]

    page.get_by_role("link", name="Forgetting").click()
    page.get_by_role("link", name="Forget by filter").click()
    page.get_by_label("Tags (all of)").fill("draft")
    page.get_by_role("button", name="Preview").click()
    dry = _tool(fresh, "forget_where", {"tags": ["draft"], "project": "alpha"})
    # The tool's preview counts the pinned draft too; the page keeps pinned memories by default.
    assert dry["count"] == 3
    assert page.locator("#preview-count").get_attribute("data-count") == "2"
    assert sorted(_ids(page, "#sample")) == sorted(tagged[:2])
    _shot(page, "forget-where-preview.png")
    unpinned = _tool(fresh, "list_memories", {"tags": ["draft"], "pinned": False})
    assert sorted(_ids(page, "#sample")) == sorted(m["id"] for m in unpinned["memories"])

    # A read-only token previews but has no button, and its POST is refused.
    reader = _page(browser, fresh, READER)
    reader.goto(page.url)
    assert reader.locator("#preview-count").get_attribute("data-count") == "2"
    assert reader.get_by_role("button", name=re.compile("Forget these")).count() == 0
    form = {"csrf": _csrf(reader), "tags": "draft", "pinned": "keep", "ids": str(tagged[0])}
    run = _base(fresh) + "/p/alpha/forgetting/where/run"
    response = reader.request.post(run, form=form, max_redirects=0)
    assert response.status == 403 and "read-only" in response.text()

    page.get_by_role("button", name="Forget these 2 memories").click()
    assert page.get_by_role("status").inner_text() == "Forgot 2 memories."
    assert page.locator('#receipt td[data-removed="rows"]').inner_text() == "2"
    remaining = page.locator("#receipt td[data-remaining]").all_inner_texts()
    assert remaining == ["0"] * 5
    _shot(page, "forget-where-receipt.png")
    left = _tool(fresh, "list_memories", {"tags": ["draft"], "project": "alpha"})["memories"]
    assert [m["id"] for m in left] == [keep["id"]]
    for memory_id in tagged[:2]:
        page.goto(_base(fresh) + f"/p/alpha/memories/{memory_id}")
        assert page.get_by_role("alert").inner_text() == "No such memory."
