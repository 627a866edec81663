"""Value objects of a memory's life after its first write: edits, history, pins, forgetting."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, JsonValue

from memory_core.domain.frozen import Frozen as _Frozen
from memory_core.domain.models import Memory

__all__ = ["ForgetReceipt", "MemoryChange", "MemoryVersion", "UpdateOutcome"]


class MemoryChange(_Frozen):
    """What an update replaces in a memory; None leaves a field as it is.

    The hashes, token count and dates go with `content` (the service derives them).
    """

    content: str | None = None
    content_hash: str | None = None
    token_count: int | None = None
    dates: str | None = None
    metadata: dict[str, JsonValue] | None = None
    tags: tuple[str, ...] | None = None


class MemoryVersion(_Frozen):
    """An earlier version of a memory, kept when an update or `learn` replaced it."""

    id: int
    memory_id: int
    key: str | None
    content: str
    metadata: dict[str, JsonValue]
    tags: tuple[str, ...] = ()
    valid_from: datetime = Field(description="When this version was written.")
    valid_until: datetime = Field(description="When a newer version replaced it.")
    change: Literal["update", "learn"]


class UpdateOutcome(_Frozen):
    """An update's result: the memory as it is now and as it was, or the row it would copy."""

    memory: Memory | None = None
    previous: Memory | None = None
    # Another memory of the same project and layer already says the new text (nothing changed).
    duplicate_of: Memory | None = None


class ForgetReceipt(_Frozen):
    """What a forget removed (or, as a dry run, would remove), place by place.

    The counts are read from the store: `rows` deleted from context_snapshots, and what left
    with them (their `vectors`, their entries in the keyword index, their `versions` of
    history, their `tags`); `remaining` is what is still found of them after the delete
    (0 everywhere when the forget is complete).
    """

    dry_run: bool
    ids: list[int]
    sample: list[Memory] = Field(default_factory=list)
    rows: int = 0
    vectors: int = 0
    keyword_entries: int = 0
    versions: int = 0
    tags: int = 0
    remaining: dict[str, int] = Field(default_factory=dict)
