"""Conversions between SQLite rows/values and domain objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory_core.domain.models import Memory
from memory_core.storage.records import RowReader

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
    return _ROWS.memory(row)


_ROWS = RowReader(decode_time)
