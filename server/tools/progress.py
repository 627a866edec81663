"""Progress notifications from long tools, sent only when the client asked for them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context

__all__ = ["progress_reporter"]


def progress_reporter(ctx: Context[Any], message: str) -> Callable[[int, int], Awaitable[None]]:
    """A (done, total) callback for a domain operation that reports MCP progress.

    `message` is formatted with `done` and `total`. The SDK sends a notification only when the
    request carried a progress token, so the callback is harmless for clients that did not.
    """

    async def report(done: int, total: int) -> None:
        await ctx.report_progress(done, total, message.format(done=done, total=total))

    return report
