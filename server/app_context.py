"""What the server lifespan yields to every tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.container import Container

__all__ = ["AppContext"]


@dataclass(frozen=True)
class AppContext:
    """The container plus the running scheduler (None when maintenance is disabled)."""

    container: Container
    scheduler: Any | None  # apscheduler's AsyncIOScheduler; untyped, see server.scheduler
