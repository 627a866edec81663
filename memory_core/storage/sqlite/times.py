"""How the SQLite store writes an instant as text, and reads it back.

Alone in its module so that the lean stats reader (kept_counts) encodes the tier cutoffs
exactly as the rows were written, without importing the domain models that rows.py builds.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["decode_time", "encode_time"]


def encode_time(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC, so that comparing the text compares the instants."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    # isoformat zero-pads the year to four digits (strftime's %Y does not below 1000).
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def decode_time(value: str) -> datetime:
    """Inverse of `encode_time`."""
    return datetime.fromisoformat(value)
