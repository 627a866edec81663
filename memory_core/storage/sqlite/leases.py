"""Scheduled maintenance on SQLite: one process per store, so every fire runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

__all__ = ["LocalJobLeases"]


class LocalJobLeases:
    """One process per store (SQLite): every fire runs, as before replicas existed."""

    @asynccontextmanager
    async def claim(self, job: str, slot: datetime) -> AsyncIterator[str | None]:
        """Always grant: SQLite jobs are idempotent and serialised by the file's write lock."""
        yield None
