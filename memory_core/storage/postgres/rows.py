"""Conversions between PostgreSQL records and domain objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory_core.domain.models import Layer, Memory, Tier

__all__ = ["COLUMNS", "aware", "row_to_memory"]

# Every column but the generated tsvector, which no caller needs and which is large.
COLUMNS = (
    "id, project, layer, key, content, metadata, session_id, created_at, updated_at,"
    " last_accessed, access_count, memory_tier, content_hash, token_count"
)


def aware(value: datetime) -> datetime:
    """A timezone-aware UTC instant (naive values are taken as UTC, as in the SQLite rows)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def row_to_memory(row: Any) -> Memory:
    """Build a Memory from a context_snapshots record."""
    last = row["last_accessed"]
    return Memory(
        id=row["id"],
        project=row["project"],
        layer=Layer(row["layer"]),
        key=row["key"],
        content=row["content"],
        metadata=row["metadata"],
        session_id=row["session_id"],
        created_at=aware(row["created_at"]),
        updated_at=aware(row["updated_at"]),
        last_accessed=aware(last) if last is not None else None,
        access_count=row["access_count"],
        tier=Tier(row["memory_tier"]),
        content_hash=row["content_hash"],
        token_count=row["token_count"],
    )
