"""What the storage cap needs of a memory store (issue 33.4); both repositories provide it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["PressureStore"]


@runtime_checkable
class PressureStore(Protocol):
    """Project sizes from the kept counters, and the cap's candidates and deletes.

    An evictable row is one whose reference time (last access, else creation) is at or before
    an instant the caller derives from the tier policy (the EXPIRED cutoff, or the ARCHIVED one
    when the cap may delete ARCHIVED rows), that is not pinned, and that no other row's
    `superseded_by` names: deleting a memory that replaced older ones would make the facts it
    corrected current again (the unsupersede trigger of migration 0013).
    """

    async def project_size(self, project: str) -> int:
        """How many memories a project holds, from the kept counters (never a row scan)."""
        ...

    async def projects_over(self, size: int) -> dict[str, int]:
        """Projects holding more than `size` memories, with their sizes (kept counters)."""
        ...

    async def eviction_candidates(
        self, project: str, used_before: datetime, *, limit: int
    ) -> list[int]:
        """Up to `limit` evictable ids, fewest uses first, then longest unused, then id."""
        ...

    async def evict(self, project: str, ids: Sequence[int], used_before: datetime) -> list[int]:
        """Delete, in one transaction, those of `ids` still evictable; the ids deleted, ascending.

        The condition is checked again in the transaction, so a row used, pinned or superseding
        another since it was listed is kept.
        """
        ...
