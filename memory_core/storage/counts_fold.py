"""A project's kept counters folded into its counts as of now: one fold for both backends.

The counters (table memory_counts, migration 0006) hold rows per layer and *stored* tier.
Each backend reads them and the rows whose reference time crossed a tier boundary since their
tier was stored (its MOVED statement); this module turns both into counts as of now. Plain
values only (no pydantic, no enums): the lean `memstrata stats` (sqlite/kept_counts.py) folds
with it too, and must not import the domain models.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LAYERS", "TIERS", "FoldedCounts", "fold_counts"]

# The values of domain.models.Tier and Layer, in their order (tests hold them equal).
TIERS = ("ACTIVE", "RECENT", "ARCHIVED", "EXPIRED")
LAYERS = ("working", "episodic", "semantic", "procedural")


@dataclass(frozen=True)
class FoldedCounts:
    """Counts per tier (as of now) and per layer, keyed by the values of Tier and Layer."""

    by_tier: dict[str, int]
    by_layer: dict[str, int]
    content_bytes: int
    never_accessed: int
    stale_tiers: int

    @property
    def total(self) -> int:
        """Every row of the project."""
        return sum(self.by_tier.values())


def fold_counts(kept: Iterable[Sequence[Any]], moved: Iterable[Sequence[Any]]) -> FoldedCounts:
    """Fold rows of (layer, stored tier, n, bytes, never accessed) and of (stored, live, n).

    Each moved row moves `n` rows from their stored tier to their tier as of now; they are
    also the stale tiers. A layer this version does not know is counted in no layer.
    """
    by_tier = dict.fromkeys(TIERS, 0)
    by_layer = dict.fromkeys(LAYERS, 0)
    content_bytes = never_accessed = 0
    for layer, tier, n, size, unread in kept:
        by_tier[str(tier)] += int(n)
        if layer in by_layer:
            by_layer[str(layer)] += int(n)
        content_bytes += int(size)
        never_accessed += int(unread)
    stale = 0
    for stored, live, n in moved:
        by_tier[str(stored)] -= int(n)
        by_tier[str(live)] += int(n)
        stale += int(n)
    return FoldedCounts(by_tier, by_layer, content_bytes, never_accessed, stale)
