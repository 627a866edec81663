"""Conversation memory through an MCP client, on SQLite and PostgreSQL, with a stub summarizer."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp import Client
from pydantic import SecretStr, ValidationError

from server.app import build_server
from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import FrozenClock
from tests.mcp_client import call, error


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    # Every test of this module runs on both backends, so a behaviour difference fails one.
    return settings_on(request, settings)


@asynccontextmanager
async def connect(settings: Settings, clock: FrozenClock) -> AsyncIterator[Client]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


class _StubChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions that echoes how many lines it was sent."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers["Authorization"], "body": body}
        )
        transcript = body["messages"][1]["content"]
        answer = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": f"STUB summary of {len(transcript.splitlines())} entries",
                    }
                }
            ]
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:  # keep the test output quiet
        pass


@contextmanager
def stub_summarizer() -> Iterator[str]:
    _StubChat.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def small(settings: Settings, **changes: Any) -> Settings:
    policy = settings.conversation.model_copy(
        update={"recent_window": 2, "min_compress_entries": 2, "compress_entry_limit": 6}
    )
    return settings.model_copy(update={"conversation": policy, **changes})


async def fill(client: Client, sid: str, n: int) -> dict[str, Any]:
    last: dict[str, Any] = {}
    for i in range(n):
        last = await call(
            client,
            "add_session_entry",
            session_id=sid,
            type="message",
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i} about the release",
        )
    return last


async def test_summary_from_the_configured_endpoint(settings: Settings, clock: FrozenClock) -> None:
    with stub_summarizer() as url:
        s = small(settings, summarizer_url=url, summarizer_model="tiny")
        s = s.model_copy(update={"summarizer_api_key": SecretStr("k-123")})
        async with connect(s, clock) as client:
            await call(client, "start_session", session_id="s1")
            last = await fill(client, "s1", 7)  # 7 active > 6: compress all but 2
            comp = last["compression"]
            assert comp["status"] == "compressed"
            summary = comp["summary"]
            assert summary["source"] == "summarizer"
            assert summary["text"] == "STUB summary of 5 entries"
            assert summary["entry_ids"] == [1, 2, 3, 4, 5]
            assert summary["compression_ratio"] > 0
        sent = _StubChat.requests[0]
        assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer k-123"
        assert sent["body"]["model"] == "tiny"
        assert "what is needed to continue" in sent["body"]["messages"][0]["content"]


async def test_summary_written_by_the_client(settings: Settings, clock: FrozenClock) -> None:
    async with connect(small(settings), clock) as client:
        await call(client, "start_session", session_id="s1")
        await fill(client, "s1", 4)
        asked = await call(client, "compress_session", session_id="s1")
        assert asked["status"] == "summary_requested"
        request = asked["summary_request"]
        assert request["entry_ids"] == [1, 2] and "turn 0" in request["transcript"]
        done = await call(
            client,
            "submit_session_summary",
            session_id="s1",
            summary="Turns 0-1 discussed the release date.",
        )
        assert done["status"] == "compressed"
        assert done["summary"]["source"] == "client"
        ctx = await call(client, "get_session_context", session_id="s1")
        assert ctx["text"].startswith("=== Previous Conversation Summaries ===")
        assert "Turns 0-1 discussed the release date." in ctx["text"]
        assert "=== Recent Conversation ===" in ctx["text"] and "turn 3" in ctx["text"]
        assert "turn 0 " not in ctx["text"].split("=== Recent Conversation ===")[1]


async def test_deterministic_fallback_summary(settings: Settings, clock: FrozenClock) -> None:
    async with connect(small(settings), clock) as client:
        await call(client, "start_session", session_id="s1")
        await call(
            client,
            "add_session_entry",
            session_id="s1",
            type="tool_call",
            tool_name="run_tests",
            arguments={"path": "tests/"},
        )
        await call(
            client,
            "add_session_entry",
            session_id="s1",
            type="tool_result",
            tool_name="run_tests",
            content="2 failed",
            is_error=True,
        )
        await fill(client, "s1", 3)
        done = await call(client, "compress_session", session_id="s1", source="fallback")
        text = done["summary"]["text"]
        assert text.startswith(("2 user messages", "1 user messages"))
        assert "tools used: run_tests" in text and "1 errors" in text
        stats = await call(client, "get_session_stats", session_id="s1")
        assert stats["summaries"] == 1 and stats["compressed_entries"] == 3
        assert stats["active_entries"] == 2
        assert stats["total_tokens"] > stats["active_tokens"] > 0


async def test_sessions_survive_a_restart_and_round_trip(
    settings: Settings, clock: FrozenClock
) -> None:
    async with connect(small(settings), clock) as client:
        await call(client, "start_session", session_id="s1")
        await fill(client, "s1", 5)
        await call(client, "compress_session", session_id="s1", source="fallback")
        await call(client, "finalize_exchange", session_id="s1", question="Ship?", answer="Yes.")
        await call(
            client,
            "cache_tool_result",
            session_id="s1",
            tool_name="ls",
            parameters={"dir": "/"},
            result=["bin", "etc"],
            duration=2,
        )
        before = await call(client, "export_session", session_id="s1")
    async with connect(small(settings), clock) as client:  # a new server on the same file
        after = await call(client, "export_session", session_id="s1")
        assert after == before
        imported = await call(client, "import_session", data=before, session_id="s2")
        assert imported["entries"] == 5 and imported["summaries"] == 1
        copy = await call(client, "export_session", session_id="s2")
        assert {**copy, "session_id": "s1"} == before
        listed = await call(client, "list_sessions")
        assert {s["session_id"] for s in listed["sessions"]} == {"s1", "s2"}
        # A listing creates nothing, so its rows say nothing about creating (issue 35, N14).
        assert all("created" not in s for s in listed["sessions"])
        text = (await client.call_tool("list_sessions", {})).content[0].text  # type: ignore[union-attr]
        assert text.startswith("2 session(s), most recently updated first:\n- s")
        assert "5 entries, updated " in text and "{" not in text
        started = (await client.call_tool("start_session", {"session_id": "s1"})).content[0]
        assert started.text.startswith("session s1 resumed: 5 entries")  # type: ignore[union-attr]
        laid_out = await client.call_tool("get_session_context", {"session_id": "s1"})
        head, _, body = laid_out.content[0].text.partition("\n")  # type: ignore[union-attr]
        assert head.startswith("session s1: ") and " tokens, 1 summaries, " in head
        assert body == laid_out.structured_content["text"]
        msg = await error(client, "import_session", data=before)
        assert "already exists" in msg
        cleared = await call(client, "clear_session", session_id="s2", confirm=True)
        assert cleared["entries_removed"] == 5


async def test_cache_lives_for_its_duration_in_exchanges(
    settings: Settings, clock: FrozenClock
) -> None:
    async with connect(settings, clock) as client:
        await call(client, "start_session", session_id="s")
        put = await call(
            client,
            "cache_tool_result",
            session_id="s",
            tool_name="fetch",
            parameters='{"url": "https://example.org", "n": 1}',
            result={"status": 200},
            duration=2,
        )
        assert put["state"].endswith("2/2 exchanges remaining")
        hit = await call(
            client,
            "lookup_tool_result",
            session_id="s",
            tool_name="fetch",
            parameters={"n": 1, "url": "https://example.org"},
        )
        assert hit["hit"] and hit["result"] == {"status": 200}
        first = await call(client, "finalize_exchange", session_id="s", question="a", answer="b")
        assert first["cache"] == [
            'fetch({"n":1,"url":"https://example.org"}): 1/2 exchanges remaining'
        ]
        stats = await call(client, "get_session_stats", session_id="s")
        assert stats["cache"] == first["cache"]
        second = await call(client, "finalize_exchange", session_id="s", question="c", answer="d")
        assert second["cache_expired"] == ["fetch: expired"] and second["cache"] == []
        miss = await call(
            client,
            "lookup_tool_result",
            session_id="s",
            tool_name="fetch",
            parameters={"n": 1, "url": "https://example.org"},
        )
        assert miss == {
            "session_id": "s",
            "hit": False,
            "result": None,
            "remaining": None,
            "duration": None,
        }


async def test_bad_input_is_a_clear_error_and_writes_nothing(
    settings: Settings, clock: FrozenClock
) -> None:
    async with connect(settings, clock) as client:
        msg = await error(
            client,
            "add_session_entry",
            session_id="ghost",
            type="message",
            role="user",
            content="hi",
        )
        assert "No session 'ghost'" in msg and "start_session" in msg
        await call(client, "start_session", session_id="s")
        msg = await error(
            client, "add_session_entry", session_id="s", type="message", role="robot", content="hi"
        )
        assert "role" in msg
        msg = await error(
            client, "add_session_entry", session_id="s", type="email", role="user", content="hi"
        )
        assert "type" in msg
        msg = await error(client, "add_session_entry", session_id="s", type="message", content="hi")
        assert "`role`" in msg and "required" in msg
        msg = await error(
            client,
            "cache_tool_result",
            session_id="s",
            tool_name="t",
            parameters={},
            result=1,
            duration=-1,
        )
        assert "`duration`" in msg
        msg = await error(
            client,
            "cache_tool_result",
            session_id="s",
            tool_name="t",
            parameters="{oops",
            result=1,
            duration=1,
        )
        assert "`parameters`" in msg and "JSON" in msg
        msg = await error(client, "clear_session", session_id="s")
        assert "confirm=true" in msg
        msg = await error(
            client, "update_memory_config", session_id="s", changes={"recent_window": "many"}
        )
        assert "recent_window" in msg
        stats = await call(client, "get_session_stats", session_id="s")
        assert stats["total_entries"] == 0 and stats["cache"] == []
        assert stats["token_counter"] == "chars/4" and stats["summarizer"] is None


async def test_runtime_config_changes_the_trigger(settings: Settings, clock: FrozenClock) -> None:
    async with connect(settings, clock) as client:
        await call(client, "start_session", session_id="s")
        out = await call(
            client,
            "update_memory_config",
            session_id="s",
            changes={"compress_entry_limit": 3, "recent_window": 1, "min_compress_entries": 2},
        )
        assert out["config"]["compress_entry_limit"] == 3
        last = await fill(client, "s", 4)
        assert last["compression"]["status"] == "summary_requested"
        assert last["compression"]["summary_request"]["entry_ids"] == [1, 2, 3]


def test_a_summarizer_url_needs_a_model_name(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="MEMSTRATA_SUMMARIZER_MODEL"):
        Settings(db=tmp_path / "m.db", summarizer_url="http://127.0.0.1:9/v1")
