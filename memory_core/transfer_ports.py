"""The storage interface export, import and backup depend on (kept apart from ports.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from memory_core.domain.models import Memory

__all__ = ["BackupReport", "ImportCounts", "MemoryTransfer", "Progress"]

# (done, total): awaited after each unit of long work, so a caller can report it.
Progress = Callable[[int, int], Awaitable[None]]


class ImportCounts(BaseModel):
    """What an import did with each record it was given."""

    model_config = ConfigDict(frozen=True)

    imported: int = 0
    skipped: int = 0  # an identical memory (same identity) was already stored
    renumbered: int = 0  # imported under a new id because the original id was taken
    redacted: dict[str, int] = Field(default_factory=dict)  # credentials taken out, by kind


class BackupReport(BaseModel):
    """A verified copy of the store."""

    model_config = ConfigDict(frozen=True)

    path: Path
    bytes: int
    integrity: str  # "ok" when the copy passed the integrity check


class MemoryTransfer(Protocol):
    """Whole rows in and out of a store, every column included (tier and access fields too)."""

    async def schema_version(self) -> int:
        """The store's schema version (number of the newest applied migration)."""
        ...

    async def count(self, project: str | None) -> int:
        """How many memories a project (or, with None, the whole store) holds."""
        ...

    async def export_page(self, project: str | None, *, after_id: int, limit: int) -> list[Memory]:
        """Up to `limit` memories with id > `after_id`, in id order, access fields untouched."""
        ...

    async def import_memories(
        self, memories: Sequence[Memory], *, progress: Progress | None = None
    ) -> ImportCounts:
        """Insert memories as they are, all in one transaction.

        A memory whose identity (key in project+layer, or content in project+layer[+session for
        working]) is already stored is skipped; one whose id is taken by another memory gets a
        new id. Nothing is written if any insert fails.
        """
        ...

    async def backup(self, target: Path, *, progress: Progress | None = None) -> BackupReport:
        """Copy the live store to `target` (replacing it) and verify the copy's integrity."""
        ...
