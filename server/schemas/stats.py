"""The result of `get_memory_stats` (and of `memstrata stats`), on the wire.

Alone in its module: `memstrata stats` is a cold process (issue 21), and the other memory
results' models (server/schemas/memories.py, ~20 pydantic models built at import) are not
imported with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from memory_core.domain.health import HealthNote
from memory_core.domain.models import Layer, Tier

if TYPE_CHECKING:
    from memory_core.services.maintenance import StatsReport

__all__ = ["StatsOut"]


class StatsOut(BaseModel):
    """Result of `get_memory_stats`."""

    project: str
    total: int
    by_tier: dict[Tier, int]
    by_layer: dict[Layer, int]
    content_bytes: int = Field(description="Bytes of memory text in this project.")
    database_bytes: int = Field(description="Size of the whole database file.")
    oldest: datetime | None
    newest: datetime | None
    stale_tiers: int = Field(description="Rows whose stored tier is out of date.")
    never_accessed: int = Field(
        description="Rows no search, recall or context load has returned yet"
        " (pruning deletes these first among expired rows)."
    )
    pinned: int = Field(0, description="Rows pinned: they never expire or get pruned.")
    superseded: int = Field(
        0, description="Rows a newer memory replaced (history, in `total`; hidden from search)."
    )
    health: list[HealthNote]

    @classmethod
    def of(cls, report: StatsReport) -> StatsOut:
        """Project a stats report onto the wire shape."""
        return cls(**report.stats.model_dump(), health=report.health)

    def as_text(self) -> str:
        """Counts on two lines, sizes and dates on one, then each health note."""
        tiers = ", ".join(f"{t.value} {n}" for t, n in self.by_tier.items())
        layers = ", ".join(f"{layer.value} {n}" for layer, n in self.by_layer.items())
        span = ""
        if self.oldest and self.newest:
            span = f"; written {self.oldest.date().isoformat()} to {self.newest.date().isoformat()}"
        unread = f", {self.never_accessed} never read" if self.never_accessed else ""
        unread += f", {self.pinned} pinned" if self.pinned else ""
        unread += f", {self.superseded} superseded" if self.superseded else ""
        lines = [
            f"project {self.project}: {self.total} memories{unread}",
            f"tiers: {tiers}" if tiers else "tiers: none",
            f"layers: {layers}" if layers else "layers: none",
            f"text {_size(self.content_bytes)}, database file {_size(self.database_bytes)}{span}",
        ]
        if self.stale_tiers:
            lines.append(f"{self.stale_tiers} stored tiers are out of date")
        lines += [f"health: {h.message}" for h in self.health]
        return "\n".join(lines)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KB" if n < 1024**2 else f"{n / 1024**2:.1f} MB"
