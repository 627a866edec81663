"""Conversions between PostgreSQL records and domain objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory_core.domain.models import Memory
from memory_core.domain.versions import MemoryVersion
from memory_core.storage.records import RowReader

__all__ = ["COLUMNS", "aware", "row_to_memory", "row_to_version"]

# Every column but the generated tsvector, which no caller needs and which is large.
COLUMNS = (
    "id, project, layer, key, content, metadata, session_id, created_at, updated_at,"
    " last_accessed, access_count, memory_tier, content_hash, token_count, author,"
    " occurred_at, dates, norm_hash, pinned, superseded_by, tags"
)


def aware(value: datetime) -> datetime:
    """A timezone-aware UTC instant (naive values are taken as UTC, as in the SQLite rows)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def row_to_memory(row: Any) -> Memory:
    """Build a Memory from a context_snapshots record (metadata arrives decoded from jsonb)."""
    return _ROWS.memory(row)


def row_to_version(row: Any) -> MemoryVersion:
    """Build a MemoryVersion from a memory_versions row."""
    return _ROWS.version(row)


_ROWS = RowReader(aware, metadata=lambda value: value)
