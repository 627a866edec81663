"""Conversions between SQLite rows/values and domain objects."""

from __future__ import annotations

from typing import Any

from memory_core.domain.models import Memory
from memory_core.domain.versions import MemoryVersion
from memory_core.storage.records import RowReader
from memory_core.storage.sqlite.times import decode_time, encode_time

__all__ = ["decode_time", "encode_time", "row_to_memory", "row_to_version"]


def row_to_memory(row: Any) -> Memory:
    """Build a Memory from a context_snapshots row (a sqlean.Row)."""
    return _ROWS.memory(row)


def row_to_version(row: Any) -> MemoryVersion:
    """Build a MemoryVersion from a memory_versions row."""
    return _ROWS.version(row)


_ROWS = RowReader(decode_time)
