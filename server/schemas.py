"""Tool results as they go on the wire (structured content), built from domain objects."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from memory_core.domain.health import HealthNote
from memory_core.domain.models import Layer, Memory, RankSignals, Tier
from memory_core.services.maintenance import StatsReport
from memory_core.services.memories import ContextResult, RecallResult, SearchResult

__all__ = [
    "AppendItemIn",
    "AppendManyOut",
    "AppendOut",
    "ClearOut",
    "CompactOut",
    "ContextItemOut",
    "ContextOut",
    "ForgetOut",
    "LearnOut",
    "MemoryOut",
    "PruneOut",
    "RecalculateOut",
    "RecallOut",
    "RuleOut",
    "SearchHitOut",
    "SearchOut",
    "StatsOut",
]


class MemoryOut(BaseModel):
    """One memory as a client sees it."""

    id: int
    layer: Layer
    key: str | None
    content: str
    metadata: dict[str, JsonValue]
    session_id: str | None
    tier: Tier
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime | None
    access_count: int
    token_count: int

    @classmethod
    def of(cls, m: Memory) -> MemoryOut:
        """Project a domain Memory onto the wire shape."""
        return cls(
            id=m.id,
            layer=m.layer,
            key=m.key,
            content=m.content,
            metadata=m.metadata,
            session_id=m.session_id,
            tier=m.tier,
            created_at=m.created_at,
            updated_at=m.updated_at,
            last_accessed=m.last_accessed,
            access_count=m.access_count,
            token_count=m.token_count,
        )


class AppendOut(BaseModel):
    """Result of `append`."""

    id: int = Field(description="The memory's id (the existing one for a duplicate).")
    project: str
    layer: Layer
    status: Literal["created", "updated", "unchanged", "duplicate"]
    key: str | None
    previous_content: str | None = Field(
        None, description="For an upsert that changed a keyed memory: what it said before."
    )
    trimmed: int = Field(0, description="Oldest working entries removed to respect the cap.")
    similar_to: int | None = Field(
        None,
        description="Id of an existing memory in the same layer that this one nearly "
        "duplicates (cosine similarity at or above the configured threshold, 0.95 by default).",
    )
    similarity: float | None = Field(None, description="Cosine similarity to `similar_to`.")
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class AppendItemIn(BaseModel):
    """One memory of `append_many` (the fields of `append`)."""

    layer: Literal["working", "episodic", "semantic", "procedural"] = Field(
        description="working, episodic, semantic (needs `key`) or procedural (needs `key`)."
    )
    content: str = Field(description="The text to remember.")
    key: str | None = Field(
        None, description="Required for semantic (the fact's name) and procedural (the condition)."
    )
    metadata: dict[str, JsonValue] | None = Field(
        None, description="Optional JSON object stored with the memory."
    )
    session_id: str | None = Field(None, description="Conversation/session scope.")


class AppendManyOut(BaseModel):
    """Result of `append_many`: one entry per item, in order."""

    project: str
    created: int = Field(description="How many items were stored as new memories.")
    results: list[AppendOut]


class LearnOut(BaseModel):
    """Result of `learn`."""

    id: int
    key: str
    status: Literal["created", "updated", "unchanged", "duplicate"]
    previous_value: str | None = None
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class RuleOut(BaseModel):
    """A procedural rule: when `condition`, do `action`."""

    id: int
    condition: str
    action: str


class RecallOut(BaseModel):
    """Result of `recall`."""

    key: str
    found: bool
    value: str | None
    memory: MemoryOut | None
    rules: list[RuleOut]
    suggestions: list[str] = Field(description="Existing keys close to the one asked for.")
    message: str

    @classmethod
    def of(cls, result: RecallResult) -> RecallOut:
        """Project a recall result onto the wire shape (the tool and the CLI share it)."""
        value, key = result.value, result.key
        rules = [RuleOut(id=r.id, condition=r.key or "", action=r.content) for r in result.rules]
        if value is not None:
            message = f"Found {key!r}."
        elif rules:
            message = f"No fact under {key!r}, but {len(rules)} procedural rule(s) apply."
        elif result.suggestions:
            message = f"No fact under {key!r}; close keys: {', '.join(result.suggestions)}."
        else:
            message = f"No fact under {key!r}. Use `search` to look by words, or `learn` it."
        return cls(
            key=key,
            found=value is not None,
            value=value.content if value else None,
            memory=MemoryOut.of(value) if value else None,
            rules=rules,
            suggestions=result.suggestions,
            message=message,
        )


class SearchHitOut(BaseModel):
    """One search hit and why it ranked there."""

    id: int
    layer: Layer
    key: str | None
    content: str
    metadata: dict[str, JsonValue]
    session_id: str | None
    created_at: datetime
    tier: Tier = Field(description="Tier the hit had when ranked (it is ACTIVE now).")
    score: float
    signals: RankSignals


class SearchOut(BaseModel):
    """Result of `search`."""

    query: str
    mode: Literal["hybrid", "keyword", "semantic"] = Field(description="The mode actually used.")
    count: int
    omitted: int = Field(0, description="Hits left out to fit `token_budget`.")
    notes: list[str] = Field(default_factory=list, description="Anything the caller should know.")
    hits: list[SearchHitOut]

    @classmethod
    def of(cls, query: str, result: SearchResult) -> SearchOut:
        """Project a search result onto the wire shape (the tool and the CLI share it)."""
        return cls(
            query=query,
            mode=result.mode.value,
            count=len(result.hits),
            omitted=result.omitted,
            notes=result.notes,
            hits=[
                SearchHitOut(
                    id=h.memory.id,
                    layer=h.memory.layer,
                    key=h.memory.key,
                    content=h.memory.content,
                    metadata=h.memory.metadata,
                    session_id=h.memory.session_id,
                    created_at=h.memory.created_at,
                    tier=h.signals.tier,
                    score=h.signals.score,
                    signals=h.signals,
                )
                for h in result.hits
            ],
        )


class ContextItemOut(MemoryOut):
    """A memory from `load_context`, with the tier it had before being loaded."""

    tier_before: Tier


class ContextOut(BaseModel):
    """Result of `load_context`."""

    project: str
    count: int
    omitted: int = Field(0, description="Memories left out to fit `token_budget`.")
    items: list[ContextItemOut]

    @classmethod
    def of(cls, project: str, result: ContextResult) -> ContextOut:
        """Project a load_context result onto the wire shape."""
        return cls(
            project=project,
            count=len(result.items),
            omitted=result.omitted,
            items=[
                ContextItemOut(**MemoryOut.of(i.memory).model_dump(), tier_before=i.tier_before)
                for i in result.items
            ],
        )


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
    health: list[HealthNote]

    @classmethod
    def of(cls, report: StatsReport) -> StatsOut:
        """Project a stats report onto the wire shape."""
        return cls(**report.stats.model_dump(), health=report.health)


class RecalculateOut(BaseModel):
    """Result of `recalculate_memory_tiers`."""

    scope: str = Field(description="The project, or '*' for all projects.")
    changed: int


class PruneOut(BaseModel):
    """Result of `prune_expired_contexts`."""

    project: str
    dry_run: bool
    deleted: int = Field(description="Memories deleted (0 on a dry run).")
    ids: list[int] = Field(description="Ids deleted, or that would be deleted on a dry run.")


class CompactOut(BaseModel):
    """Result of `compact`."""

    layer: Layer
    removed: int
    kept: int
    summary_ids: list[int] = Field(description="Summary entries written, one per 50 removed.")


class ClearOut(BaseModel):
    """Result of `clear`."""

    project: str
    layer: Layer | None
    deleted: int


class ForgetOut(BaseModel):
    """Result of `forget`."""

    id: int
    deleted: bool
    content: str
