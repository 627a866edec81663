"""Wire shapes of the scratchpad, preference, playbook and business-context tools."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from memory_core.domain.knowledge import DocumentRecord, Playbook, Preference, Snippet
from memory_core.ports.knowledge import SharingStatus
from memory_core.services.business import BusinessHit, IngestResult
from memory_core.services.scratchpad import Promotion
from memory_core.services.shared_patterns import SharedHit, SharingChange

__all__ = [
    "BusinessHitOut",
    "BusinessSearchOut",
    "DocumentDeleteOut",
    "DocumentListOut",
    "DocumentOut",
    "EvictedOut",
    "ExportOut",
    "IngestOut",
    "PlaybookBriefOut",
    "PlaybookFindOut",
    "PlaybookMatchOut",
    "PlaybookOut",
    "PlaybookRecordOut",
    "PreferenceDeleteOut",
    "PreferenceFindOut",
    "PreferenceGetOut",
    "PreferenceListOut",
    "PreferenceMatchOut",
    "PreferenceOut",
    "PreferenceUpdateOut",
    "PromotionOut",
    "ScratchpadDeleteOut",
    "ScratchpadPromoteOut",
    "ScratchpadReadOut",
    "ScratchpadWriteOut",
    "SeedOut",
    "SharedPatternOut",
    "SharingOut",
    "SnippetOut",
    "Target",
]

Target = Literal["preferences", "business_context"]


class PromotionOut(BaseModel):
    """Where a snippet was promoted: a user's preference key or a tenant's document source."""

    target: Target
    ref: str = Field(description="The preference key, or the business document's source.")
    owner: str = Field(description="The user (preferences) or tenant (business context).")
    reason: Literal["explicit", "recurrence", "salient"]

    @classmethod
    def of(cls, p: Promotion) -> PromotionOut:
        """From the service's Promotion."""
        return cls(target=p.target.value, ref=p.ref, owner=p.owner, reason=p.reason.value)


class SnippetOut(BaseModel):
    """A scratchpad snippet."""

    id: int
    snippet: str
    user: str | None
    tenant: str | None
    salient: bool
    created_at: datetime
    last_used_at: datetime
    use_count: int
    promoted_to: Target | None
    promoted_ref: str | None

    @classmethod
    def of(cls, s: Snippet, promotion: Promotion | None = None) -> SnippetOut:
        """From a Snippet (with a promotion that happened after it was read)."""
        return cls(
            id=s.id,
            snippet=s.text,
            user=s.user,
            tenant=s.tenant,
            salient=s.salient,
            created_at=s.created_at,
            last_used_at=s.last_used_at,
            use_count=s.use_count,
            promoted_to=promotion.target.value
            if promotion
            else (s.promoted_to.value if s.promoted_to else None),
            promoted_ref=promotion.ref if promotion else s.promoted_ref,
        )


class EvictedOut(BaseModel):
    """A snippet evicted to make room; `promoted_to` says whether it lives on elsewhere."""

    id: int
    snippet: str
    promoted_to: Target | None
    promoted_ref: str | None


class ScratchpadWriteOut(BaseModel):
    """The result of `scratchpad_write`."""

    session_id: str
    status: Literal["created", "refreshed"]
    snippet: SnippetOut
    evicted: list[EvictedOut]
    occurrences: int = Field(
        description="Sessions (flows) holding this snippet or a near-duplicate of it."
    )
    promotion: PromotionOut | None
    cap: int
    notes: list[str]
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class ScratchpadReadOut(BaseModel):
    """A session's snippets, most recently used first."""

    session_id: str
    count: int
    cap: int
    snippets: list[SnippetOut]

    def as_text(self) -> str:
        """A count, then one line per snippet: id, marks, the note."""
        lines = [f"{self.count} of at most {self.cap} notes in session {self.session_id}:"]
        for s in self.snippets:
            marks = [m for m in ("salient" if s.salient else "", s.promoted_to or "") if m]
            if s.use_count > 1:
                marks.append(f"used {s.use_count}x")
            label = f" ({', '.join(marks)})" if marks else ""
            lines.append(f"#{s.id}{label}: {s.snippet}")
        return "\n".join(lines)


class ScratchpadPromoteOut(BaseModel):
    """The result of `scratchpad_promote`."""

    session_id: str
    id: int
    promotion: PromotionOut


class PreferenceOut(BaseModel):
    """A user's rule."""

    key: str
    value: str
    flow_id: str | None
    origin: str = Field(description="'client' (preferences_update) or 'scratchpad' (promoted).")
    updated_at: datetime

    @classmethod
    def of(cls, p: Preference) -> PreferenceOut:
        """From a Preference."""
        return cls(
            key=p.key, value=p.value, flow_id=p.flow_id, origin=p.origin, updated_at=p.updated_at
        )


class PreferenceUpdateOut(BaseModel):
    """The result of `preferences_update`."""

    user: str
    status: Literal["created", "updated"]
    preference: PreferenceOut
    previous_value: str | None
    notes: list[str]
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class PreferenceGetOut(BaseModel):
    """The result of `preferences_get`."""

    user: str
    key: str
    found: bool
    preference: PreferenceOut | None
    message: str


class PreferenceMatchOut(BaseModel):
    """A rule that applies, with how well and how it matched."""

    preference: PreferenceOut
    score: float
    match: Literal["flow", "semantic", "keyword", "weak"] = Field(
        description="weak: under the cut, listed because the user has few rules."
    )


class PreferenceFindOut(BaseModel):
    """Rules that apply to a situation, best first."""

    user: str
    mode: Literal["flow", "semantic", "keyword"]
    count: int
    matches: list[PreferenceMatchOut]
    notes: list[str]


class PlaybookOut(BaseModel):
    """A recorded trajectory."""

    id: int
    flow: str
    user_query: str
    slots: dict[str, JsonValue]
    tool_calls: list[JsonValue]
    outcome: str
    created_at: datetime

    @classmethod
    def of(cls, p: Playbook) -> PlaybookOut:
        """From a Playbook."""
        return cls(
            id=p.id,
            flow=p.flow,
            user_query=p.user_query,
            slots=p.slots,
            tool_calls=p.tool_calls,
            outcome=p.outcome,
            created_at=p.created_at,
        )


class PlaybookRecordOut(BaseModel):
    """The result of `playbook_record`."""

    user: str
    status: Literal["created", "duplicate"]
    playbook: PlaybookOut
    notes: list[str]
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class PlaybookMatchOut(BaseModel):
    """A playbook whose query means what was asked."""

    playbook: PlaybookOut
    similarity: float
    match: Literal["flow", "semantic", "keyword"] = Field(
        description="flow: a playbook of the flow asked for, whatever its similarity."
    )


class PlaybookFindOut(BaseModel):
    """Playbooks at or above the similarity threshold, best first."""

    user: str
    mode: Literal["flow", "semantic", "keyword"]
    threshold: float
    count: int
    matches: list[PlaybookMatchOut]
    notes: list[str]
    scratchpad_snippet_id: int | None = Field(
        None, description="The note the best playbook became in the session's scratchpad."
    )


class IngestOut(BaseModel):
    """What ingesting one document did."""

    tenant: str
    source: str
    status: Literal["created", "replaced", "unchanged"]
    chunks: int
    chars: int
    embedded: bool = Field(description="False: the chunks are found by words only.")
    notes: list[str]
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )

    @classmethod
    def of(cls, r: IngestResult) -> IngestOut:
        """From an IngestResult."""
        return cls(
            tenant=r.document.tenant,
            source=r.document.source,
            status=r.status,
            chunks=r.document.chunk_count,
            chars=r.document.char_count,
            embedded=r.embedded,
            notes=r.notes,
            redacted=r.redacted,
        )


class BusinessHitOut(BaseModel):
    """A chunk of a business document, where it sits, and why it ranked."""

    source: str
    position: int = Field(description="The chunk's number in its document, from 0.")
    start: int = Field(description="Offset of the chunk's first character in the document.")
    end: int
    text: str
    score: float = Field(description="Fused relevance, 1 for the best candidate.")
    keyword_rank: int | None
    vector_rank: int | None
    similarity: float | None

    @classmethod
    def of(cls, h: BusinessHit) -> BusinessHitOut:
        """From a BusinessHit."""
        c = h.chunk
        return cls(
            source=c.source,
            position=c.position,
            start=c.start,
            end=c.end,
            text=c.text,
            score=h.score,
            keyword_rank=h.keyword_rank,
            vector_rank=h.vector_rank,
            similarity=h.similarity,
        )


class SharedPatternOut(BaseModel):
    """An anonymised pattern several tenants hold; it names none of them."""

    shared: Literal[True] = Field(
        True, description="Always true: this is not the tenant's own document."
    )
    text: str = Field(description="Names, identifiers and secrets are replaced by [name], ...")
    score: float = Field(description="Cosine to the query (or share of its words, no model).")

    @classmethod
    def of(cls, h: SharedHit) -> SharedPatternOut:
        """From a SharedHit."""
        return cls(text=h.text, score=h.score)


class BusinessSearchOut(BaseModel):
    """The best chunks of a tenant's business context."""

    tenant: str
    mode: Literal["hybrid", "keyword"]
    count: int
    candidates: int
    hits: list[BusinessHitOut]
    notes: list[str]
    shared: list[SharedPatternOut] = Field(
        default_factory=list,
        description="With include_shared: anonymised patterns held by at least k opted-in "
        "tenants (never which ones), apart from the tenant's own hits.",
    )


class SharingOut(BaseModel):
    """Whether a tenant contributes to shared patterns, and what a change did."""

    tenant: str
    sharing: bool = Field(description="Whether the tenant contributes now.")
    changed: bool = Field(description="False: it already was in that state.")
    since: datetime | None = Field(None, description="When the tenant opted in.")
    passages: int = Field(0, description="Anonymised sentences of the tenant in the pool.")
    passages_removed: int = 0
    patterns_removed: int = 0
    min_tenants: int = Field(description="k: tenants that must hold a pattern to share it.")
    notes: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, change: SharingChange, status: SharingStatus, k: int) -> SharingOut:
        """From what opting in or out did and the status after it."""
        return cls(
            tenant=change.tenant,
            sharing=change.sharing,
            changed=change.changed,
            since=status.opted_in_at,
            passages=status.passages,
            passages_removed=change.passages_removed,
            patterns_removed=change.patterns_removed,
            min_tenants=k,
            notes=change.notes,
        )


class SeedOut(BaseModel):
    """What uploading an agent.md did, section by section."""

    tenant: str
    created: int
    replaced: int
    unchanged: int
    sections: list[IngestOut]
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class ExportOut(BaseModel):
    """A tenant's seeded sections and promoted snippets as one agent.md text."""

    tenant: str
    seeded_sections: int
    learned_items: int
    text: str


class PlaybookBriefOut(BaseModel):
    """A recorded playbook as a list shows it (its slots and calls: `playbook_find`)."""

    id: int
    flow: str
    user_query: str
    outcome: str
    created_at: datetime

    @classmethod
    def of(cls, p: Playbook) -> PlaybookBriefOut:
        """From a Playbook."""
        return cls(
            id=p.id,
            flow=p.flow,
            user_query=p.user_query,
            outcome=p.outcome,
            created_at=p.created_at,
        )


class PreferenceListOut(BaseModel):
    """Every rule and playbook of a user."""

    user: str
    rules: list[PreferenceOut]
    playbooks: list[PlaybookBriefOut]


class PreferenceDeleteOut(BaseModel):
    """What `preferences_delete` removed, and what it was asked for but did not find."""

    user: str
    deleted_keys: list[str]
    deleted_playbook_ids: list[int]
    not_found: list[str] = Field(description="Keys and playbook ids (as text) not stored.")


class ScratchpadDeleteOut(BaseModel):
    """What `scratchpad_delete` removed."""

    session_id: str | None
    user: str | None
    deleted: int
    ids: list[int]
    not_found: list[int]


class DocumentOut(BaseModel):
    """A stored business document, without its text."""

    source: str
    origin: str = Field(description="ingest, agent_md (seeded) or promoted (from a snippet).")
    chunks: int
    chars: int
    updated_at: datetime

    @classmethod
    def of(cls, d: DocumentRecord) -> DocumentOut:
        """From a DocumentRecord."""
        return cls(
            source=d.source,
            origin=d.origin.value,
            chunks=d.chunk_count,
            chars=d.char_count,
            updated_at=d.updated_at,
        )


class DocumentListOut(BaseModel):
    """Every document of a tenant, oldest first."""

    tenant: str
    count: int
    documents: list[DocumentOut]


class DocumentDeleteOut(BaseModel):
    """What `delete_documents` removed."""

    tenant: str
    deleted: list[str]
    not_found: list[str]
