"""Wire shapes of the scratchpad, preference, playbook and business-context tools.

Structured content is complete (offsets, ranks, times) for clients that read it; each
answer's `as_text()` is what a model reads: one line per item, the match strength (strong,
partial or weak, the scale memory `search` uses) on every hit, no offsets or ranks.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from memory_core.domain.knowledge import DocumentRecord, Playbook, Preference, Snippet
from memory_core.domain.match import Match
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

_MATCH_DESCRIPTION = (
    "How well it matches: strong, partial or weak (absolute, on memory search's scale: a weak "
    "best hit means nothing relevant was found)."
)
_BLANK_LINES = re.compile(r"\n\s*\n")


def _text(content: str) -> str:
    """Stored text on an answer line: blank lines dropped, continuation lines indented."""
    return _BLANK_LINES.sub("\n", content.strip()).replace("\n", "\n  ")


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _name(name: str) -> str:
    """A key or source on an answer line: quoted when a space or colon would blur it."""
    return _json(name) if not name or re.search(r"[\s:]", name) else name


def _notes(notes: list[str]) -> list[str]:
    return [f"note: {n}" for n in notes]


def _redacted(redacted: dict[str, int]) -> str:
    if not redacted:
        return ""
    kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(redacted.items()))
    return f"; credentials redacted: {kinds}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


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

    def as_text(self) -> str:
        """`units created for ann`, with the value it replaced."""
        line = f"{_name(self.preference.key)} {self.status} for {self.user}"
        if self.previous_value is not None:
            line += f"; was: {_text(self.previous_value)}"
        return "\n".join([line + _redacted(self.redacted), *_notes(self.notes)])


class PreferenceGetOut(BaseModel):
    """The result of `preferences_get`."""

    user: str
    key: str
    found: bool
    preference: PreferenceOut | None
    message: str

    def as_text(self) -> str:
        """`units = Use metric units.`, or the message saying what to do instead."""
        p = self.preference
        if p is None:
            return self.message
        flow = f"  (flow {p.flow_id})" if p.flow_id else ""
        return f"{_name(p.key)} = {_text(p.value)}{flow}"


class PreferenceMatchOut(BaseModel):
    """A rule that applies, with how well it matched."""

    preference: PreferenceOut
    score: float = Field(
        description="Cosine to the situation (share of its words without a model; 1 in a flow)."
    )
    match: Match = Field(
        description="strong, partial or weak (under the cut, listed because the user has few "
        "rules); a rule of the flow asked for is strong."
    )


class PreferenceFindOut(BaseModel):
    """Rules that apply to a situation, strongest first."""

    user: str
    mode: Literal["flow", "semantic", "keyword"]
    count: int
    matches: list[PreferenceMatchOut]
    notes: list[str]

    def as_text(self) -> str:
        """A header line, one line per rule (key, match strength, value), then the notes."""
        head = f"{_count(self.count, 'rule')} of {self.user} ({self.mode})"
        lines = [head + (":" if self.count else ": nothing matched.")]
        for m in self.matches:
            p = m.preference
            flow = f" flow={p.flow_id}" if p.flow_id and self.mode != "flow" else ""
            lines.append(f"{_name(p.key)} {m.match.value}{flow}: {_text(p.value)}")
        return "\n".join(lines + _notes(self.notes))


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

    def as_text(self) -> str:
        """`playbook #3 (flow booking) created for ann`."""
        p = self.playbook
        status = "created" if self.status == "created" else "already recorded (duplicate)"
        line = f"playbook #{p.id} (flow {p.flow}) {status} for {self.user}"
        return "\n".join([line + _redacted(self.redacted), *_notes(self.notes)])


def _playbook_line(p: PlaybookOut) -> str:
    """A playbook's request, outcome, slots and calls: what a model follows."""
    line = f"{_json(p.user_query)} -> {_text(p.outcome)}"
    if p.slots:
        line += f"; slots {_json(p.slots)}"
    if p.tool_calls:
        line += f"; calls {_json(p.tool_calls)}"
    return line


class PlaybookMatchOut(BaseModel):
    """A playbook whose query means what was asked."""

    playbook: PlaybookOut
    similarity: float = Field(
        description="Cosine of its request to the query (share of the query's words, no model)."
    )
    match: Match = Field(description=_MATCH_DESCRIPTION)


class PlaybookFindOut(BaseModel):
    """Playbooks that match a request, strongest first."""

    user: str
    mode: Literal["flow", "semantic", "keyword"] = Field(
        description="flow: every playbook of the flow asked for, whatever its match."
    )
    threshold: float = Field(
        description="Where a partial match starts: the cosine (keyword mode: the share of the "
        "query's words)."
    )
    count: int
    matches: list[PlaybookMatchOut]
    notes: list[str]
    scratchpad_snippet_id: int | None = Field(
        None, description="The note the best playbook became in the session's scratchpad."
    )

    def as_text(self) -> str:
        """A header, one line per playbook (id, flow, match, request -> outcome, steps)."""
        head = f"{_count(self.count, 'playbook')} of {self.user} ({self.mode})"
        if self.scratchpad_snippet_id is not None:
            head += f"; the first written to scratchpad note #{self.scratchpad_snippet_id}"
        lines = [head + (":" if self.count else ": nothing matched.")]
        for m in self.matches:
            p = m.playbook
            lines.append(f"#{p.id} {p.flow} {m.match.value}: {_playbook_line(p)}")
        return "\n".join(lines + _notes(self.notes))


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

    def line(self) -> str:
        """`handbook.md created: 3 chunks, 2,345 chars`."""
        words = "" if self.embedded else ", found by words only (no vectors)"
        size = f"{_count(self.chunks, 'chunk')}, {_count(self.chars, 'char')}"
        return f"{_name(self.source)} {self.status}: {size}{words}{_redacted(self.redacted)}"

    def as_text(self) -> str:
        """Its line, then the notes."""
        return "\n".join([self.line(), *_notes(self.notes)])


class BusinessHitOut(BaseModel):
    """A chunk of a business document, how well it matches, where it sits, why it ranked."""

    source: str
    match: Match = Field(description=_MATCH_DESCRIPTION)
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
            match=h.match,
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
    match: Match = Field(description=_MATCH_DESCRIPTION)

    @classmethod
    def of(cls, h: SharedHit, match: Match) -> SharedPatternOut:
        """From a SharedHit and its match strength."""
        return cls(text=h.text, score=h.score, match=match)


class BusinessSearchOut(BaseModel):
    """The best chunks of a tenant's business context."""

    tenant: str
    mode: Literal["hybrid", "keyword"]
    count: int
    candidates: int
    weaker: int = Field(0, description="Chunks left out because they matched below `min_match`.")
    hits: list[BusinessHitOut]
    notes: list[str]
    shared: list[SharedPatternOut] = Field(
        default_factory=list,
        description="With include_shared: anonymised patterns held by at least k opted-in "
        "tenants (never which ones), apart from the tenant's own hits.",
    )

    def as_text(self) -> str:
        """A header, one line per chunk (source, match, text), the shared patterns, notes."""
        head = f"{_count(self.count, 'chunk')} of {self.tenant} ({self.mode})"
        if self.weaker:
            head += f", {self.weaker} weaker left out by min_match"
        if self.count:
            head += ":"
        else:
            head += ": no document of its own matched:" if self.shared else ": nothing matched."
        lines = [head]
        lines += [f"{_name(h.source)} {h.match.value}: {_text(h.text)}" for h in self.hits]
        # Labelled on every line: another tenant's pattern, never this tenant's document.
        lines += [f"shared pattern {p.match.value}: {_text(p.text)}" for p in self.shared]
        return "\n".join(lines + _notes(self.notes))


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

    def as_text(self) -> str:
        """The counts, then one line per section."""
        head = (
            f"agent.md for {self.tenant}: {self.created} created, {self.replaced} replaced, "
            f"{self.unchanged} unchanged"
        )
        notes = list(dict.fromkeys(n for s in self.sections for n in s.notes))
        return "\n".join([head + ":", *(s.line() for s in self.sections), *_notes(notes)])


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

    def as_text(self) -> str:
        """A count, one line per rule (key = value), then one per playbook."""
        head = f"{_count(len(self.rules), 'rule')} and "
        head += f"{_count(len(self.playbooks), 'playbook')} of {self.user}"
        lines = [head + (":" if self.rules or self.playbooks else ".")]
        for r in self.rules:
            flow = f"  (flow {r.flow_id})" if r.flow_id else ""
            lines.append(f"{_name(r.key)} = {_text(r.value)}{flow}")
        lines += [
            f"playbook #{p.id} {p.flow}: {_json(p.user_query)} -> {_text(p.outcome)}"
            for p in self.playbooks
        ]
        return "\n".join(lines)


class PreferenceDeleteOut(BaseModel):
    """What `preferences_delete` removed, and what it was asked for but did not find."""

    user: str
    deleted_keys: list[str]
    deleted_playbook_ids: list[int]
    not_found: list[str] = Field(description="Keys and playbook ids (as text) not stored.")

    def as_text(self) -> str:
        """What was deleted, and what was asked for but not stored."""
        parts = []
        if self.deleted_keys:
            parts.append(f"rules {', '.join(_name(k) for k in self.deleted_keys)}")
        if self.deleted_playbook_ids:
            parts.append(f"playbooks {', '.join(f'#{i}' for i in self.deleted_playbook_ids)}")
        line = f"Deleted {' and '.join(parts) or 'nothing'} of {self.user}"
        if self.not_found:
            line += f"; not found: {', '.join(self.not_found)}"
        return line + "."


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

    def as_text(self) -> str:
        """A count, then one line per document: source, origin, size, last update."""
        lines = [
            f"{_count(self.count, 'document')} of {self.tenant}"
            + (":" if self.count else "; none stored.")
        ]
        lines += [
            f"{_name(d.source)} ({d.origin}): {_count(d.chunks, 'chunk')}, "
            f"{_count(d.chars, 'char')}, updated {d.updated_at.date()}"
            for d in self.documents
        ]
        return "\n".join(lines)


class DocumentDeleteOut(BaseModel):
    """What `delete_documents` removed."""

    tenant: str
    deleted: list[str]
    not_found: list[str]

    def as_text(self) -> str:
        """What was deleted, and what was asked for but not stored."""
        shown = ", ".join(_name(s) for s in self.deleted)
        line = f"Deleted {_count(len(self.deleted), 'document')} of {self.tenant}"
        line += f": {shown}" if shown else "."
        if self.not_found:
            line += f"; not found: {', '.join(_name(s) for s in self.not_found)}"
        return line
