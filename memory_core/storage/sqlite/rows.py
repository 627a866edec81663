"""Conversions between SQLite rows/values and domain objects."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memory_core.domain.models import Layer, Memory, Tier

__all__ = ["decode_time", "encode_time", "row_to_memory"]


def encode_time(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC, so that comparing the text compares the instants."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    # isoformat zero-pads the year to four digits (strftime's %Y does not below 1000).
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def decode_time(value: str) -> datetime:
    """Inverse of `encode_time`."""
    return datetime.fromisoformat(value)


def row_to_memory(row: Any) -> Memory:
    """Build a Memory from a context_snapshots row (a sqlean.Row)."""
    last = row["last_accessed"]
    return Memory(
        id=row["id"],
        project=row["project"],
        layer=Layer(row["layer"]),
        key=row["key"],
        content=row["content"],
        metadata=json.loads(row["metadata"]),
        session_id=row["session_id"],
        created_at=decode_time(row["created_at"]),
        updated_at=decode_time(row["updated_at"]),
        last_accessed=decode_time(last) if last is not None else None,
        access_count=row["access_count"],
        tier=Tier(row["memory_tier"]),
        content_hash=row["content_hash"],
        token_count=row["token_count"],
    )
