"""Composition root: open the store, migrate it and build the services, once per entry point."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import structlog

from memory_core.clock import SystemClock
from memory_core.ports import Clock, MemoryRepository
from memory_core.services.memories import MemoryService
from memory_core.storage.sqlite import SqliteMemoryRepository, apply_migrations, open_database
from server.settings import Settings

__all__ = ["Container", "open_container"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Container:
    """Everything a tool, a job or a CLI command needs."""

    settings: Settings
    repo: MemoryRepository
    clock: Clock
    memories: MemoryService

    def project(self, name: str | None) -> str:
        """The project a call is about: the one it names, else the configured default."""
        return name if name is not None else self.settings.project


@asynccontextmanager
async def open_container(
    settings: Settings, clock: Clock | None = None
) -> AsyncIterator[Container]:
    """Open the database (WAL, busy timeout, sqlite-vec), migrate it, build the services."""
    db = await open_database(settings.db)
    try:
        applied = await apply_migrations(db)
        repo = SqliteMemoryRepository(db)
        the_clock = clock or SystemClock()
        memories = MemoryService(
            repo=repo,
            clock=the_clock,
            limits=settings.limits,
            tiers=settings.tiers,
            ranking=settings.ranking,
        )
        log.info("store.opened", db=str(settings.db), migrations_applied=applied)
        yield Container(settings=settings, repo=repo, clock=the_clock, memories=memories)
    finally:
        await db.close()
        log.info("store.closed")
