"""What the server lifespan yields to every tool call (and shares with the dashboard)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.container import Container
from server.scheduler import JobRuns

__all__ = ["AppContext", "LiveContext"]


@dataclass
class AppContext:
    """The container plus the running scheduler.

    `scheduler` is None while it has not started (over stdio it starts after the first
    `tools/list`, server.app) and when maintenance is disabled; only the lifespan sets it.
    """

    container: Container
    scheduler: Any | None  # apscheduler's AsyncIOScheduler; untyped, see server.scheduler
    runs: JobRuns = field(default_factory=JobRuns)


@dataclass
class LiveContext:
    """The running server's AppContext, for routes beside MCP (the dashboard).

    The MCP lifespan opens the store once; routes that are not MCP requests get no
    `ctx.request_context`, so the lifespan also puts its context here while it runs.
    """

    current: AppContext | None = None
