"""Helpers for talking to the server through the in-memory MCP client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client
from mcp.types import Implementation

from server.app import build_server
from server.settings import Settings

__all__ = ["call", "error", "hosted"]


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A tool's structured result, asserting the call succeeded."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


async def error(client: Client, tool: str, **args: Any) -> str:
    """A tool's error text, asserting the call failed."""
    result = await client.call_tool(tool, args)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


@asynccontextmanager
async def hosted(
    settings: Settings, *, client_info: Implementation | None = None, **kw: Any
) -> AsyncIterator[Client]:
    """An in-memory client whose server runs in one task of its own.

    `client_info` is what the client says it is in `initialize` (the SDK's own by default);
    `kw` goes to build_server.

    pytest-asyncio may run a fixture's setup and teardown in different tasks, but the Client's
    anyio cancel scopes must exit in the task that entered them.
    """
    ready, done = asyncio.Event(), asyncio.Event()
    box: dict[str, Client] = {}

    async def host() -> None:
        async with Client(build_server(settings, **kw), client_info=client_info) as c:
            box["c"] = c
            ready.set()
            await done.wait()

    task = asyncio.create_task(host())
    await asyncio.wait_for(ready.wait(), 10)
    try:
        yield box["c"]
    finally:
        done.set()
        await task
