"""Tool results as they go on the wire (structured content), built from domain objects.

Some clients (Claude Code) hand the model a result's structured content in place of its text,
so these models hold what a model needs: ids, text, layer, key, dates, match strength. Ranking
signals and whole stored records come only on request (`explain`), and fields left at their
default are not sent (server.tools.structured).
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, JsonValue, PrivateAttr

from memory_core.domain.match import Match
from memory_core.domain.models import Layer, Memory, RankSignals, Tier
from server.schemas.sparse import Sparse

if TYPE_CHECKING:
    # What the `of` constructors take: annotations only, so the server does not load the
    # memory service and its search modules with the schemas.
    from memory_core.services.memories import ContextResult, RecallResult, SearchResult
    from memory_core.services.resemblance import Likeness

__all__ = [
    "AppendItemIn",
    "AppendManyOut",
    "AppendOut",
    "CandidateOut",
    "ClearOut",
    "CompactOut",
    "ContextItemOut",
    "ContextOut",
    "ForgetOut",
    "LayerName",
    "LearnOut",
    "MemoryLine",
    "MemoryOut",
    "PruneOut",
    "RecalculateOut",
    "RecallOut",
    "RuleOut",
    "SearchHitOut",
    "SearchOut",
]

# A memory layer as a tool argument (the values of memory_core.domain.models.Layer).
LayerName = Literal["working", "episodic", "semantic", "procedural"]

# A field named `date` cannot be annotated `date` in its own class body (pydantic).
Day = date


# How many ids a text answer lists before saying "and N more" (structuredContent has all).
IDS_SHOWN = 20


def _text(content: str) -> str:
    """Memory text on a hit line: continuation lines indented so hits stay apart."""
    return content.replace("\n", "\n  ")


def _ids(ids: list[int]) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:IDS_SHOWN])
    more = len(ids) - IDS_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


# Only for a `project` the caller named: the default project's first write is expected.
_NEW_PROJECT_DESCRIPTION = (
    "True when the named project held no memory before this call: a new project was "
    "created (check the name if you meant an existing one)."
)


def _new_project(project: str, new: bool) -> str:
    return f"; new project {project!r} created (check the name if you meant another)" if new else ""


def _redacted(redacted: dict[str, int]) -> str:
    if not redacted:
        return ""
    kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(redacted.items()))
    return f"; credentials redacted: {kinds}"


def _memory_label(layer: Layer, key: str | None) -> str:
    """`procedural when "X"`, `semantic user.lang`, or the layer alone."""
    if key is None:
        return layer.value
    if layer is Layer.PROCEDURAL:
        return f'procedural when "{key}"'
    return f"{layer.value} {key}"


def _meta(
    metadata: dict[str, JsonValue],
    session_id: str | None,
    author: str | None = None,
    dates: str | None = None,
) -> str:
    parts = []
    if author:
        parts.append(f"by {author}")
    if dates:
        # The dates its text mentions, resolved ("yesterday" -> the day before it was said).
        parts.append(f"when={dates.replace(' ', ',')}")
    if session_id:
        parts.append(f"session={session_id}")
    if metadata:
        parts.append(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")))
    return f" {' '.join(parts)}" if parts else ""


class MemoryOut(BaseModel):
    """One memory as a client sees it."""

    id: int
    layer: Layer
    key: str | None
    content: str
    metadata: dict[str, JsonValue]
    session_id: str | None
    author: str | None = None
    occurred_at: datetime | None = None
    dates: str | None = None
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
            author=m.author,
            occurred_at=m.occurred_at,
            dates=m.dates,
            tier=m.tier,
            created_at=m.created_at,
            updated_at=m.updated_at,
            last_accessed=m.last_accessed,
            access_count=m.access_count,
            token_count=m.token_count,
        )


class CandidateOut(BaseModel):
    """A close memory that differs."""

    id: int
    content: str
    similarity: float

    @classmethod
    def of(cls, likeness: Likeness) -> CandidateOut:
        """From the service's judgement."""
        return cls(
            id=likeness.memory.id,
            content=likeness.memory.content,
            similarity=round(likeness.resemblance.similarity, 3),
        )


class AppendOut(Sparse):
    """Result of `append`."""

    id: int = Field(description="The memory's id (the existing one for a duplicate).")
    project: str
    layer: Layer
    status: Literal["created", "updated", "unchanged", "duplicate"]
    key: str | None = None
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
    new_project: bool = Field(False, description=_NEW_PROJECT_DESCRIPTION)
    candidates: list[CandidateOut] = Field(
        default_factory=list,
        description="Close memories it may replace: confirm by appending it again with "
        "supersedes=[ids].",
    )

    def as_text(self) -> str:
        """`#12 episodic created`, with what the model should know about it."""
        line = f"#{self.id} {_memory_label(self.layer, self.key)} {self.status}"
        for c in self.candidates:
            line += f"; may supersede #{c.id}: {_text(c.content)}"
        if self.previous_content is not None:
            line += f"; was: {_text(self.previous_content)}"
        if self.similar_to is not None:
            line += f"; similar to #{self.similar_to} ({self.similarity or 0:.2f})"
        if self.trimmed:
            line += f"; {self.trimmed} oldest working entries trimmed"
        return line + _redacted(self.redacted) + _new_project(self.project, self.new_project)


class AppendItemIn(BaseModel):
    """One memory of `append_many` (the fields of `append`)."""

    layer: LayerName = Field(
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
    author: str | None = Field(None, description="Who said or wrote it.")
    occurred_at: datetime | None = Field(
        None, description="When it was said, if not now (ISO-8601); 'yesterday' counts from it."
    )
    tags: list[str] | None = Field(None, max_length=20, description="Labels.")
    supersedes: list[int] | None = Field(
        None, max_length=100, description="Ids of memories this one replaces (then hidden)."
    )


class AppendManyOut(Sparse):
    """Result of `append_many`: one entry per item, in order."""

    project: str
    created: int = Field(description="How many items were stored as new memories.")
    results: list[AppendOut]
    new_project: bool = Field(False, description=_NEW_PROJECT_DESCRIPTION)

    def as_text(self) -> str:
        """A count, then one line per item."""
        head = f"{self.created} of {len(self.results)} stored as new in {self.project}"
        lines = [head + _new_project(self.project, self.new_project) + ":"]
        lines += [r.as_text() for r in self.results]
        return "\n".join(lines)


class LearnOut(Sparse):
    """Result of `learn`."""

    id: int
    key: str
    status: Literal["created", "updated", "unchanged", "duplicate"]
    previous_value: str | None = None
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )
    project: str = Field("", description="The project written to.")
    new_project: bool = Field(False, description=_NEW_PROJECT_DESCRIPTION)

    def as_text(self) -> str:
        """`learned user.lang (#3, updated; was: Java)`."""
        was = f"; was: {_text(self.previous_value)}" if self.previous_value is not None else ""
        new = _new_project(self.project, self.new_project)
        return f"{self.key}: #{self.id} {self.status}{was}{_redacted(self.redacted)}{new}"


class RuleOut(BaseModel):
    """A procedural rule: when `condition`, do `action`."""

    id: int
    condition: str
    action: str


class RecallOut(Sparse):
    """Result of `recall`."""

    key: str
    found: bool
    value: str | None = Field(None, description="The fact stored under `key`.")
    id: int | None = Field(None, description="The fact's memory id.")
    date: Day | None = Field(None, description="The day the fact was last written.")
    rules: list[RuleOut] = Field(
        default_factory=list, description="Procedural rules whose condition matches `key`."
    )
    suggestions: list[str] = Field(
        default_factory=list, description="Existing keys close to the one asked for."
    )
    message: str | None = Field(None, description="When no fact is found: what to do instead.")
    memory: MemoryOut | None = Field(
        None, description="The whole stored record, when asked for (`memstrata recall --json`)."
    )
    _tier: Tier | None = PrivateAttr(None)

    @classmethod
    def of(cls, result: RecallResult, *, whole: bool = False) -> RecallOut:
        """Project a recall result onto the wire shape (the tool and the CLI share it).

        `whole` adds the stored record (`memory`), which a model does not need.
        """
        value, key = result.value, result.key
        rules = [RuleOut(id=r.id, condition=r.key or "", action=r.content) for r in result.rules]
        if value is not None:
            message = None
        elif rules:
            message = f"No fact under {key!r}, but {len(rules)} procedural rule(s) apply."
        elif result.suggestions:
            message = f"No fact under {key!r}; close keys: {', '.join(result.suggestions)}."
        else:
            message = f"No fact under {key!r}. Use `search` to look by words, or `learn` it."
        out = cls(
            key=key,
            found=value is not None,
            value=value.content if value else None,
            id=value.id if value else None,
            date=value.updated_at.date() if value else None,
            rules=rules,
            suggestions=result.suggestions,
            message=message,
            memory=MemoryOut.of(value) if value and whole else None,
        )
        out._tier = value.tier if value else None
        return out

    def as_text(self) -> str:
        """The value (or the message), then the rules that apply."""
        lines = []
        if self.value is not None:
            tier = f", {self._tier.value}" if self._tier else ""
            lines.append(f"{self.key} = {_text(self.value)}  (#{self.id}{tier})")
        else:
            lines.append(self.message or "")
        lines += [f'rule #{r.id} when "{r.condition}": {_text(r.action)}' for r in self.rules]
        return "\n".join(lines)


class MemoryLine(BaseModel):
    """A memory as a line of a text answer shows it: what a model needs of it."""

    id: int
    layer: Layer
    key: str | None = None
    content: str
    dates: str | None = Field(
        None, description="Dates its text mentions, resolved: ISO days, `start..end` ranges."
    )
    author: str | None = None
    session_id: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    pinned: bool = False
    superseded_by: int | None = None
    folded: int = Field(0, description="Older versions folded away behind it.")

    def meta(self) -> str:
        """Its author, dates, session, metadata and standing, as its text line shows them."""
        line = _meta(self.metadata, self.session_id, self.author, self.dates)
        if self.tags:
            line += f" tags={','.join(self.tags)}"
        if self.pinned:
            line += " pinned"
        if self.superseded_by is not None:
            line += f" (superseded by #{self.superseded_by})"
        if self.folded:
            line += f" (newest of {self.folded + 1} versions)"
        return line


def _standing(m: Memory) -> dict[str, object]:
    """A memory's tags, pin and supersession, for a MemoryLine (only those it has)."""
    out: dict[str, object] = {}
    if m.tags:
        out["tags"] = list(m.tags)
    if m.pinned:
        out["pinned"] = True
    if m.superseded_by is not None:
        out["superseded_by"] = m.superseded_by
    return out


class SearchHitOut(MemoryLine):
    """One search hit: the memory and how well it matches; why it ranked there on request."""

    match: Match = Field(
        description="How well it matches the query: strong, partial or weak (absolute: a weak "
        "best hit means nothing relevant was found)."
    )
    date: Day = Field(description="The day it was written, or said (`occurred_at`).")
    tier: Tier | None = Field(
        None, description="With explain: the tier it had when ranked (it is ACTIVE now)."
    )
    score: float | None = Field(None, description="With explain: the final ranking score.")
    signals: RankSignals | None = Field(None, description="With explain: why it ranked there.")
    created_at: datetime | None = Field(None, description="With explain: when it was stored.")
    occurred_at: datetime | None = Field(
        None, description="With explain: when it was said, if not `created_at`."
    )


class SearchOut(Sparse):
    """Result of `search`."""

    mode: Literal["hybrid", "keyword", "semantic"] = Field(description="The mode actually used.")
    omitted: int = Field(0, description="Hits left out to fit `token_budget`.")
    weaker: int = Field(0, description="Hits left out because they matched below `min_match`.")
    notes: list[str] = Field(default_factory=list, description="Anything the caller should know.")
    hits: list[SearchHitOut]
    query: str | None = Field(
        None, description="With explain: the query and rephrasings searched, joined by ' | '."
    )
    _explain: bool = PrivateAttr(False)
    _signals: list[RankSignals] = PrivateAttr(default_factory=list)

    @property
    def count(self) -> int:
        """How many hits there are."""
        return len(self.hits)

    @classmethod
    def of(cls, query: str, result: SearchResult, *, explain: bool = False) -> SearchOut:
        """Project a search result onto the wire shape (the tool and the CLI share it).

        `explain` adds each hit's tier, score, signals and times (and the signals to the text).
        """
        out = cls(
            query=query if explain else None,
            mode=result.mode.value,
            omitted=result.omitted,
            weaker=result.dropped,
            notes=result.notes,
            hits=[
                SearchHitOut(
                    id=h.memory.id,
                    layer=h.memory.layer,
                    key=h.memory.key,
                    content=h.memory.content,
                    match=h.signals.match,
                    date=(h.memory.occurred_at or h.memory.created_at).date(),
                    dates=h.memory.dates,
                    author=h.memory.author,
                    session_id=h.memory.session_id,
                    metadata=h.memory.metadata,
                    folded=result.folded.get(h.memory.id, 0),
                    **_standing(h.memory),
                    **(_explained(h.memory, h.signals) if explain else {}),
                )
                for h in result.hits
            ],
        )
        out._explain = explain
        out._signals = [h.signals for h in result.hits]
        return out

    def as_text(self) -> str:
        """A header line, one line per hit, then the notes."""
        noun = "hit" if self.count == 1 else "hits"
        head = f"{self.count} {noun} ({self.mode})"
        if self.omitted:
            head += f", {self.omitted} more left out by token_budget"
        if self.weaker:
            head += f", {self.weaker} weaker left out by min_match"
        if not self.count:
            head += ": nothing relevant." if self.weaker else ": nothing matched."
        lines = [head]
        for h, signals in zip(self.hits, self._signals, strict=True):
            label = _memory_label(h.layer, h.key)
            line = f"#{h.id} {label} {signals.tier.value} {h.match.value} {h.date}{h.meta()}"
            if self._explain:
                line += f" [{_signals(signals)}]"
            lines.append(f"{line}: {_text(h.content)}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _explained(memory: Memory, signals: RankSignals) -> dict[str, object]:
    """The fields of a hit that only `explain` adds."""
    return {
        "tier": signals.tier,
        "score": signals.score,
        "signals": signals,
        "created_at": memory.created_at,
        "occurred_at": memory.occurred_at,
    }


def _signals(s: RankSignals) -> str:
    parts = []
    if s.bm25_rank is not None:
        parts.append(f"bm25 #{s.bm25_rank}")
    if s.vector_rank is not None:
        distance = f" d={s.vector_distance:.2f}" if s.vector_distance is not None else ""
        parts.append(f"vector #{s.vector_rank}{distance}")
    parts.append(f"relevance {s.relevance:.2f}")
    parts.append(f"words {s.word_share:.2f}")
    if s.session_lift:
        parts.append(f"session +{s.session_lift:.2f}")
    if s.author_lift:
        parts.append(f"author +{s.author_lift:.2f}")
    if s.date_lift:
        parts.append(f"date +{s.date_lift:.2f}")
    if s.follow_lift:
        parts.append(f"follow-up +{s.follow_lift:.2f}")
    parts.append(f"tier {s.tier_boost:+.1f}")
    parts.append(f"recency {s.recency:.2f}")
    parts.append(f"score {s.score:.2f}")
    return ", ".join(parts)


class ContextItemOut(MemoryLine):
    """A memory from `load_context`, as its line in the text answer shows it."""

    tier: Tier = Field(description="The tier it had before being loaded (it is ACTIVE now).")
    date: Day = Field(description="The day it was last written.")


class ContextOut(Sparse):
    """Result of `load_context`."""

    project: str
    briefing: str | None = Field(
        None,
        description="Without `layer`: the project's briefing (rules, recent memories, last "
        "session summary), as the text answer shows it; `items` is then left out.",
    )
    omitted: int = Field(0, description="Memories left out to fit `token_budget`.")
    items: list[ContextItemOut] = Field(
        default_factory=list, description="With `layer`: the memories loaded, in order."
    )

    @property
    def count(self) -> int:
        """How many memories are listed."""
        return len(self.items)

    @classmethod
    def of(cls, project: str, result: ContextResult, briefing: str | None = None) -> ContextOut:
        """Project a load_context result onto the wire shape (the briefing replaces the items)."""
        if briefing:
            return cls(project=project, briefing=briefing)
        return cls(
            project=project,
            omitted=result.omitted,
            items=[
                ContextItemOut(
                    id=i.memory.id,
                    layer=i.memory.layer,
                    key=i.memory.key,
                    content=i.memory.content,
                    tier=i.tier_before,
                    date=i.memory.updated_at.date(),
                    dates=i.memory.dates,
                    author=i.memory.author,
                    session_id=i.memory.session_id,
                    metadata=i.memory.metadata,
                    **_standing(i.memory),
                )
                for i in result.items
            ],
        )

    def as_text(self) -> str:
        """The briefing, or a header line and one line per memory in the order loaded."""
        if self.briefing:
            return self.briefing
        head = f"{self.count} memories of project {self.project}"
        if self.omitted:
            head += f", {self.omitted} more left out by token_budget"
        lines = [head + (":" if self.count else "; nothing stored yet.")]
        for m in self.items:
            label = _memory_label(m.layer, m.key)
            lines.append(f"#{m.id} {label} {m.tier.value} {m.date}{m.meta()}: {_text(m.content)}")
        return "\n".join(lines)


class RecalculateOut(BaseModel):
    """Result of `recalculate_memory_tiers`."""

    scope: str = Field(description="The project, or '*' for all projects.")
    changed: int

    def as_text(self) -> str:
        """How many tiers changed, where."""
        where = "every project" if self.scope == "*" else f"project {self.scope}"
        return f"Recalculated tiers in {where}: {self.changed} changed."


class PruneOut(BaseModel):
    """Result of `prune_expired_contexts`."""

    project: str
    dry_run: bool
    deleted: int = Field(description="Memories deleted (0 on a dry run).")
    ids: list[int] = Field(description="Ids deleted, or that would be deleted on a dry run.")

    def as_text(self) -> str:
        """What was (or would be) deleted."""
        if not self.ids:
            return f"Nothing EXPIRED to prune in project {self.project}."
        verb = "Would prune" if self.dry_run else "Pruned"
        return (
            f"{verb} {len(self.ids)} EXPIRED memories in project {self.project}: {_ids(self.ids)}"
        )


class CompactOut(BaseModel):
    """Result of `compact`."""

    layer: Layer
    removed: int
    kept: int
    summary_ids: list[int] = Field(description="Summary entries written, one per 50 removed.")

    def as_text(self) -> str:
        """Removed, kept and the summaries written."""
        line = f"Compacted {self.layer.value}: {self.removed} removed, {self.kept} kept"
        if self.summary_ids:
            line += f"; summaries {_ids(self.summary_ids)}"
        return line + "."


class ClearOut(BaseModel):
    """Result of `clear`."""

    project: str
    layer: Layer | None
    deleted: int

    def as_text(self) -> str:
        """How many memories were deleted, where."""
        where = f"the {self.layer.value} layer of " if self.layer else ""
        return f"Deleted {self.deleted} memories from {where}project {self.project}."


class ForgetOut(BaseModel):
    """Result of `forget`."""

    id: int
    deleted: bool
    content: str

    def as_text(self) -> str:
        """What was forgotten."""
        return f"Forgot #{self.id}: {_text(self.content)}"
