"""Answers of the curation tools (update, history, pin, list_memories, forget_where)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, JsonValue

from memory_core.domain.models import Layer, Memory
from memory_core.domain.versions import ForgetReceipt, MemoryVersion
from server.schemas.sparse import Sparse

__all__ = [
    "CuratedMemory",
    "ForgetWhereOut",
    "HistoryOut",
    "ListMemoriesOut",
    "PinOut",
    "UpdateOut",
    "VersionOut",
]

# Characters of a memory's text a listing line shows.
_LINE_CHARS = 160


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _LINE_CHARS else flat[: _LINE_CHARS - 1] + "…"


class CuratedMemory(Sparse):
    """A memory as a listing shows it, with its pin, tags and supersession."""

    id: int
    layer: Layer
    key: str | None = None
    content: str
    tags: list[str] = Field(default_factory=list)
    pinned: bool = False
    superseded_by: int | None = Field(None, description="The newer memory that replaced it.")
    created_at: datetime
    author: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @classmethod
    def of(cls, m: Memory) -> CuratedMemory:
        """From a domain Memory."""
        return cls(
            id=m.id,
            layer=m.layer,
            key=m.key,
            content=m.content,
            tags=list(m.tags),
            pinned=m.pinned,
            superseded_by=m.superseded_by,
            created_at=m.created_at,
            author=m.author,
            metadata=m.metadata,
        )

    def as_line(self) -> str:
        """`#12 episodic [pinned] {tags} text (superseded by #14)`."""
        label = f"{self.layer.value} {self.key}:" if self.key else self.layer.value
        marks = " pinned" if self.pinned else ""
        tags = f" [{', '.join(self.tags)}]" if self.tags else ""
        tail = f" (superseded by #{self.superseded_by})" if self.superseded_by else ""
        return f"#{self.id} {label}{marks}{tags} {_line(self.content)}{tail}"


class UpdateOut(Sparse):
    """Result of `update`."""

    id: int
    status: str = Field(description="updated, unchanged, or duplicate (of `duplicate_of`).")
    changed: list[str] = Field(default_factory=list)
    previous_content: str | None = None
    duplicate_of: int | None = None
    memory: CuratedMemory | None = None
    redacted: dict[str, int] = Field(default_factory=dict)

    def as_text(self) -> str:
        """What the update did."""
        if self.duplicate_of is not None:
            return f"#{self.id} unchanged: #{self.duplicate_of} already says this"
        if not self.changed:
            return f"#{self.id} unchanged"
        line = f"#{self.id} updated ({', '.join(self.changed)})"
        if self.previous_content is not None:
            line += f"; was: {_line(self.previous_content)}"
        return line


class VersionOut(BaseModel):
    """An earlier version of a memory."""

    content: str
    key: str | None = None
    tags: list[str] = Field(default_factory=list)
    valid_from: datetime
    valid_until: datetime
    change: str

    @classmethod
    def of(cls, v: MemoryVersion) -> VersionOut:
        """From a domain MemoryVersion."""
        return cls(
            content=v.content,
            key=v.key,
            tags=list(v.tags),
            valid_from=v.valid_from,
            valid_until=v.valid_until,
            change=v.change,
        )


class HistoryOut(Sparse):
    """Result of `history`: the memory now, and its earlier versions oldest first."""

    memory: CuratedMemory
    versions: list[VersionOut] = Field(default_factory=list)

    def as_text(self) -> str:
        """The memory, then one line per earlier version."""
        lines = [self.memory.as_line()]
        lines += [
            f"  until {v.valid_until:%Y-%m-%d %H:%M} ({v.change}): {_line(v.content)}"
            for v in reversed(self.versions)
        ]
        if not self.versions:
            lines.append("  no earlier version")
        return "\n".join(lines)


class PinOut(Sparse):
    """Result of `pin` and `unpin`."""

    pinned: bool
    ids: list[int]
    missing: list[int] = Field(default_factory=list)

    def as_text(self) -> str:
        """Which memories are now pinned (or not)."""
        what = "pinned" if self.pinned else "unpinned"
        line = f"{what}: " + ", ".join(f"#{i}" for i in self.ids)
        if self.missing:
            line += "; not found: " + ", ".join(f"#{i}" for i in self.missing)
        return line


class ListMemoriesOut(Sparse):
    """Result of `list_memories`: a page, newest first, and the cursor of the next one."""

    memories: list[CuratedMemory] = Field(default_factory=list)
    next_cursor: int | None = Field(
        None, description="Pass as `before_id` for the next page; absent on the last page."
    )

    def as_text(self) -> str:
        """One line per memory, then how to get the next page."""
        if not self.memories:
            return "no memories match"
        lines = [m.as_line() for m in self.memories]
        if self.next_cursor is not None:
            lines.append(f"more: before_id={self.next_cursor}")
        return "\n".join(lines)


class ForgetWhereOut(Sparse):
    """Result of `forget_where`: a preview (dry run) or the receipt of the deletion."""

    dry_run: bool
    count: int
    ids: list[int] = Field(default_factory=list)
    sample: list[CuratedMemory] = Field(default_factory=list)
    removed: dict[str, int] = Field(
        default_factory=dict,
        description="What left with the memories, place by place (rows, vectors, "
        "keyword_entries, versions, tags).",
    )
    remaining: dict[str, int] = Field(
        default_factory=dict, description="What is still found of them there (0: all gone)."
    )

    @classmethod
    def of(cls, r: ForgetReceipt) -> ForgetWhereOut:
        """From the store's receipt."""
        return cls(
            dry_run=r.dry_run,
            count=r.rows,
            ids=r.ids,
            sample=[CuratedMemory.of(m) for m in r.sample],
            removed={
                "rows": r.rows,
                "vectors": r.vectors,
                "keyword_entries": r.keyword_entries,
                "versions": r.versions,
                "tags": r.tags,
            },
            remaining=r.remaining,
        )

    def as_text(self) -> str:
        """The preview with its sample, or the receipt."""
        if self.dry_run:
            head = f"would forget {self.count} memories (dry run; call again with dry_run=false)"
            return "\n".join([head, *(m.as_line() for m in self.sample)])
        places = ", ".join(f"{n} {k}" for k, n in self.removed.items())
        left = sum(self.remaining.values())
        status = "nothing left behind" if left == 0 else f"{left} entries remain: {self.remaining}"
        return f"forgot {self.count} memories ({places}); {status}"
