"""Following sessions and projects live (issue 36): real `memstrata serve` over stdio and HTTP.

A client subscribes (`resources/subscribe` in the handshake era, `subscriptions/listen` at
2026-07-28), a write from the same client or from a second server process on the same
database follows, and the update arrives. Waits are bounded only to turn a hang into a
failure (HANG_S), never to assert how fast anything is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import LoggingMessageNotificationParams

from tests.e2e.conftest import PROJECT, memstrata_exe, ok, server_env
from tests.e2e.test_http import HttpServer, _wait_until_listening
from tests.e2e.test_http_auth import _start

pytestmark = pytest.mark.e2e

HANG_S = 60.0
SECRET = "the staging root password is hunter2-swordfish"
SESSION = f"memory://{PROJECT}/session/s1"
OTHER = f"memory://{PROJECT}/session/s2"
STATS = f"memory://{PROJECT}/stats"
# resources/subscribe and logging/setLevel are the handshake era's (deprecated at 2026-07-28).
HANDSHAKE_ERA = "ignore::mcp.shared.exceptions.MCPDeprecationWarning"


class Inbox:
    """What the server sent a client unasked: resource updates and log lines."""

    def __init__(self) -> None:
        self.updates: asyncio.Queue[str] = asyncio.Queue()
        self.logs: asyncio.Queue[str] = asyncio.Queue()
        self.seen_logs: list[str] = []

    async def on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            await self.updates.put(str(message.params.uri))

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        await self.logs.put(str(params.data))

    async def update(self) -> str:
        return await asyncio.wait_for(self.updates.get(), HANG_S)

    async def update_of(self, uri: str) -> None:
        """Wait for an update of `uri` (others before it are skipped)."""
        while await self.update() != uri:
            pass

    async def log_starting(self, name: str) -> str:
        """Wait for the next log line naming event `name` (every line is kept in seen_logs)."""
        while True:
            line = await asyncio.wait_for(self.logs.get(), HANG_S)
            self.seen_logs.append(line)
            if line.split(" ", 1)[0] == name:
                return line

    def drain(self) -> None:
        while not self.updates.empty():
            self.updates.get_nowait()


def _env(db: Path) -> dict[str, str]:
    return {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}


@asynccontextmanager
async def _stdio(
    db: Path, log: Path, inbox: Inbox | None = None, **kw: Any
) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=str(memstrata_exe()), args=["serve"], env=_env(db))
    handlers: dict[str, Any] = {}
    if inbox is not None:
        handlers = {"message_handler": inbox.on_message, "logging_callback": inbox.on_log}
    with log.open("a", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), read_timeout_seconds=30, **handlers, **kw
        ) as client:
            yield client


async def _say(client: Client, session: str, content: str, **extra: Any) -> None:
    args = {"session_id": session, "type": "message", "role": "user", "content": content}
    ok(await client.call_tool("add_session_entry", {**args, **extra}))


@pytest.mark.filterwarnings(HANDSHAKE_ERA)
async def test_a_subscribed_stdio_client_hears_its_own_and_another_process_writes(
    db_path: Path, tmp_path: Path
) -> None:
    inbox = Inbox()
    async with (
        _stdio(db_path, tmp_path / "a.log", inbox, mode="legacy") as follower,
        _stdio(db_path, tmp_path / "b.log") as writer,
    ):
        assert follower.server_capabilities.resources is not None
        assert follower.server_capabilities.resources.subscribe is True
        assert follower.server_capabilities.logging is not None
        for sid in ("s1", "s2"):
            ok(await follower.call_tool("start_session", {"session_id": sid}))
        ok(
            await follower.call_tool(
                "update_memory_config",
                {
                    "session_id": "s1",
                    "changes": {"recent_window": 1, "min_compress_entries": 1},
                },
            )
        )
        await follower.subscribe_resource(SESSION)
        await follower.set_logging_level("info")

        await _say(follower, "s1", SECRET)  # the same client
        await inbox.update_of(SESSION)
        assert "type=message" in await inbox.log_starting("entry:added")

        result = {"session_id": "s1", "type": "tool_result", "content": f"{SECRET} (tool)"}
        ok(await writer.call_tool("add_session_entry", result))  # another process
        await inbox.update_of(SESSION)
        assert "type=tool_result" in await inbox.log_starting("entry:added")

        compressed = ok(
            await writer.call_tool("compress_session", {"session_id": "s1", "source": "fallback"})
        )
        assert compressed["status"] == "compressed"
        line = await inbox.log_starting("compressed")
        assert "tokens_saved=" in line and "source=fallback" in line

        ok(await writer.call_tool("clear_session", {"session_id": "s1", "confirm": True}))
        await inbox.log_starting("session:cleared")
        view = await follower.read_resource(OTHER)
        assert view.contents[0].text.startswith("Session: s2 | Project: e2e")  # type: ignore[union-attr]

        # Unsubscribed from s1 and subscribed to s2: a write to s1 then one to s2 brings the
        # s2 update alone (both land in the same or in successive ticks of the watcher).
        inbox.drain()
        await follower.unsubscribe_resource(SESSION)
        await follower.subscribe_resource(OTHER)
        ok(await writer.call_tool("start_session", {"session_id": "s1"}))
        await _say(writer, "s1", "after the unsubscribe")
        await _say(writer, "s2", "a write the follower hears")
        assert await inbox.update() == OTHER

    every_line = "\n".join(inbox.seen_logs)
    assert "session=s1" in every_line
    assert "hunter2" not in every_line and "swordfish" not in every_line


async def test_a_listen_stream_over_stdio_hears_sessions_and_project_stats(
    db_path: Path, tmp_path: Path
) -> None:
    inbox = Inbox()
    async with (
        _stdio(db_path, tmp_path / "a.log", inbox, log_level="info") as follower,
        _stdio(db_path, tmp_path / "b.log") as writer,
    ):
        assert follower.protocol_version == "2026-07-28"
        ok(await writer.call_tool("start_session", {"session_id": "s1"}))
        async with follower.listen(resource_subscriptions=[SESSION, STATS]) as sub:
            events = aiter(sub)
            await _say(writer, "s1", SECRET)
            assert (await asyncio.wait_for(anext(events), HANG_S)).uri == SESSION  # type: ignore[union-attr]
            line = await inbox.log_starting("entry:added")
            assert "session=s1" in line and "swordfish" not in line

            ok(
                await writer.call_tool(
                    "append", {"layer": "episodic", "content": "Deployed billing on Friday"}
                )
            )
            assert (await asyncio.wait_for(anext(events), HANG_S)).uri == STATS  # type: ignore[union-attr]


ALPHA_SESSION = "memory://alpha/session/s1"


@asynccontextmanager
async def _http(server: HttpServer, token: str, **kw: Any) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        Client(streamable_http_client(server.url, http_client=http), **kw) as client,
    ):
        yield client


@pytest.mark.filterwarnings(HANDSHAKE_ERA)
async def test_http_listen_hears_another_process_and_grants_bound_who_may_follow(
    tmp_path: Path,
) -> None:
    from tests.e2e.test_http_auth import ADMIN, ALPHA, BETA, TOKENS

    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = _start(tmp_path, {"MEMSTRATA_AUTH_TOKENS_FILE": str(tokens)}, ["--host", "127.0.0.1"])
    try:
        _wait_until_listening(server)
        async with _http(server, ALPHA) as alpha, _http(server, BETA) as beta:
            ok(await alpha.call_tool("start_session", {"session_id": "s1", "project": "alpha"}))
            with pytest.raises(MCPError, match="outside this token's grant"):
                async with beta.listen(resource_subscriptions=[ALPHA_SESSION]):
                    pass
            with pytest.raises(MCPError, match="outside this token's grant"):
                async with beta.listen(resource_subscriptions=["memory://alpha/stats"]):
                    pass

        async with _http(server, BETA, mode="legacy") as beta_legacy:
            with pytest.raises(MCPError, match="outside this token's grant"):
                await beta_legacy.subscribe_resource(ALPHA_SESSION)
        async with _http(server, ADMIN, mode="legacy") as admin_legacy:
            # Stateless HTTP cannot carry an update after the request: listen instead.
            with pytest.raises(MCPError, match="subscriptions/listen"):
                await admin_legacy.subscribe_resource(ALPHA_SESSION)

        # A second process writes to the same database: a stdio server beside the HTTP one.
        env_db = server.db
        async with (
            _http(server, ADMIN) as admin,
            _stdio(env_db, tmp_path / "writer.log") as writer,
            admin.listen(resource_subscriptions=[ALPHA_SESSION]) as sub,
        ):
            events = aiter(sub)
            args = {"session_id": "s1", "project": "alpha", "type": "context", "content": "x"}
            ok(await writer.call_tool("add_session_entry", args))
            assert (await asyncio.wait_for(anext(events), HANG_S)).uri == ALPHA_SESSION  # type: ignore[union-attr]
            ok(await admin.call_tool("add_session_entry", {**args, "content": "y"}))
            assert (await asyncio.wait_for(anext(events), HANG_S)).uri == ALPHA_SESSION  # type: ignore[union-attr]
    finally:
        server.stop()
