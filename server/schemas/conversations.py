"""Conversation-memory tool results as they go on the wire, built from domain objects."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import (
    CachedResult,
    EntryType,
    SessionInfo,
    SessionStats,
    Summary,
)
from memory_core.services.conversations import CompressionResult, FinalizedExchange

__all__ = [
    "CacheLookupOut",
    "CachePutOut",
    "ClearSessionOut",
    "CompressionOut",
    "EntryAddedOut",
    "ExchangeOut",
    "ImportSessionOut",
    "RequestPageOut",
    "SessionBriefOut",
    "SessionConfigOut",
    "SessionContextOut",
    "SessionListOut",
    "SessionOut",
    "SessionStatsOut",
    "SummaryOut",
    "SummaryRequestOut",
]


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


class SessionBriefOut(BaseModel):
    """A session as a listing shows it."""

    session_id: str
    created_at: datetime
    updated_at: datetime
    entries: int = Field(description="Entries recorded so far.")

    @classmethod
    def of(cls, info: SessionInfo) -> SessionBriefOut:
        """Project a SessionInfo onto the wire shape."""
        return cls(
            session_id=info.session_id,
            created_at=info.created_at,
            updated_at=info.updated_at,
            entries=info.last_entry,
        )

    def as_line(self) -> str:
        """`- s1: 5 entries, updated 2026-11-26 01:31 UTC`."""
        return f"- {self.session_id}: {self.entries} entries, updated {_when(self.updated_at)}"


class SessionOut(SessionBriefOut):
    """A session's identity, and whether `start_session` created it."""

    created: bool = Field(description="True if this call created it.")

    @classmethod
    def started(cls, info: SessionInfo, created: bool) -> SessionOut:
        """The answer of `start_session`."""
        return cls(**SessionBriefOut.of(info).model_dump(), created=created)

    def as_text(self) -> str:
        """`session s1 created` or `session s1 resumed: 5 entries, updated ...`."""
        if self.created:
            return f"session {self.session_id} created"
        return (
            f"session {self.session_id} resumed: {self.entries} entries, "
            f"updated {_when(self.updated_at)}"
        )


class SessionListOut(BaseModel):
    """Sessions, most recently updated first."""

    sessions: list[SessionBriefOut]

    def as_text(self) -> str:
        """A count, then one line per session."""
        if not self.sessions:
            return "0 sessions in this project."
        head = f"{len(self.sessions)} session(s), most recently updated first:"
        return "\n".join([head, *(s.as_line() for s in self.sessions)])


class SummaryOut(BaseModel):
    """A stored summary and what it replaced."""

    id: int
    text: str
    entry_ids: list[int]
    token_count: int
    original_tokens: int
    compression_ratio: float
    covers_from: datetime
    covers_until: datetime
    source: Literal["summarizer", "client", "fallback"]

    @classmethod
    def of(cls, s: Summary) -> SummaryOut:
        """Project a Summary onto the wire shape."""
        return cls(
            id=s.id,
            text=s.text,
            entry_ids=list(s.entry_ids),
            token_count=s.token_count,
            original_tokens=s.original_tokens,
            compression_ratio=s.ratio,
            covers_from=s.covers_from,
            covers_until=s.covers_until,
            source=s.source,
        )


class SummaryRequestOut(BaseModel):
    """Entries for your own model to summarise; submit with `submit_session_summary`."""

    entry_ids: list[int]
    instructions: str
    transcript: str = Field(
        description="The entries, each cut to about summary_request_entry_bytes and all to "
        "summary_request_bytes; the whole text is in `read_summary_request`."
    )
    cut_entry_ids: list[int] = Field(
        description="Entries shortened or left out of `transcript` (read them whole with "
        "`read_summary_request`)."
    )
    pages: int = Field(description="Pages of the whole transcript in `read_summary_request`.")
    target_tokens: int


class RequestPageOut(BaseModel):
    """One page of the whole transcript of the pending summary request."""

    session_id: str
    entry_ids: list[int]
    page: int
    pages: int
    transcript: str
    next_page: int | None = Field(description="The page to read next; null after the last.")


class CompressionOut(BaseModel):
    """What a compression did, or what it asks of you."""

    status: Literal[
        "compressed", "summary_requested", "summary_pending", "not_needed", "too_few_entries"
    ] = Field(
        description="summary_pending: a summary asked of you earlier is still due (the "
        "request is sent once; `read_summary_request` reads it again)."
    )
    reason: str
    summary: SummaryOut | None = None
    summary_request: SummaryRequestOut | None = Field(
        None,
        description="Set when status is 'summary_requested': write the summary following "
        "`instructions` and call `submit_session_summary`.",
    )
    tokens_saved: int = 0

    @classmethod
    def of(cls, r: CompressionResult) -> CompressionOut:
        """Project a CompressionResult onto the wire shape."""
        request = None
        if r.request is not None:
            request = SummaryRequestOut(
                entry_ids=list(r.request.entry_ids),
                instructions=r.request.instructions,
                transcript=r.request.transcript,
                cut_entry_ids=list(r.request.cut_entry_ids),
                pages=r.request.pages,
                target_tokens=r.request.target_tokens,
            )
        return cls(
            status=r.status,
            reason=r.reason,
            summary=SummaryOut.of(r.summary) if r.summary else None,
            summary_request=request,
            tokens_saved=r.tokens_saved,
        )


class EntryAddedOut(BaseModel):
    """The stored entry's id and size, the session's active counts, the compression it set off."""

    session_id: str
    entry_id: int
    type: EntryType
    token_count: int = Field(description="Tokens of the stored entry.")
    active_entries: int = Field(description="Entries of the session not yet compressed.")
    active_tokens: int = Field(description="Their tokens (compression starts above a threshold).")
    compression: CompressionOut | None = None
    redacted: dict[str, int] = Field(
        default_factory=dict, description="Credentials replaced by [REDACTED:<kind>], by kind."
    )


class SessionContextOut(BaseModel):
    """The session laid out for you: summaries, then the recent conversation."""

    session_id: str
    text: str
    summaries: int
    entries: int
    exchanges: int
    omitted_summaries: int = Field(description="Summaries left out to fit token_budget.")
    omitted_entries: int = Field(description="Older entries left out to fit token_budget.")
    omitted_exchanges: int = Field(0, description="Exchanges left out to fit token_budget.")
    cached_results: int = Field(0, description="Cached tool results shown in the text.")
    omitted_cached_results: int = Field(
        0, description="Cached tool results left out to fit token_budget."
    )
    tokens: int

    def as_text(self) -> str:
        """The laid-out session, after one line of what it holds and what was left out."""
        left = (
            self.omitted_summaries
            + self.omitted_entries
            + self.omitted_exchanges
            + self.omitted_cached_results
        )
        cut = f"; {left} left out to fit token_budget" if left else ""
        head = (
            f"session {self.session_id}: {self.tokens} tokens, {self.summaries} summaries, "
            f"{self.entries} entries, {self.exchanges} exchanges{cut}"
        )
        return f"{head}\n{self.text}" if self.text else head


class SessionStatsOut(BaseModel):
    """Counts of one session."""

    session_id: str
    total_entries: int
    active_entries: int
    compressed_entries: int
    summaries: int
    total_tokens: int
    active_tokens: int
    exchanges: int
    active_exchanges: int
    cache: list[str] = Field(description="'tool(params): 2/3 exchanges remaining' per result.")
    token_counter: str
    summarizer: str | None

    @classmethod
    def of(
        cls, session_id: str, s: SessionStats, counter: str, summarizer: str | None
    ) -> SessionStatsOut:
        """Project SessionStats onto the wire shape."""
        return cls(
            session_id=session_id,
            total_entries=s.total_entries,
            active_entries=s.active_entries,
            compressed_entries=s.compressed_entries,
            summaries=s.summaries,
            total_tokens=s.total_tokens,
            active_tokens=s.active_tokens,
            exchanges=s.exchanges,
            active_exchanges=s.active_exchanges,
            cache=[c.describe() for c in s.cache],
            token_counter=counter,
            summarizer=summarizer,
        )


class ExchangeOut(BaseModel):
    """A finalised exchange and what it set off."""

    session_id: str
    exchange_id: int
    answer: str = Field(description="The answer as stored (shortened if it was long).")
    answer_shortened: bool
    folded_exchange_ids: list[int] = Field(
        description="Older exchanges folded into the session summary by this one."
    )
    qa_summary_bytes: int
    qa_summary_compressed: bool
    cache_expired: list[str]
    cache: list[str]
    redacted: dict[str, int] = Field(
        default_factory=dict, description="Credentials replaced by [REDACTED:<kind>], by kind."
    )

    @classmethod
    def of(cls, session_id: str, f: FinalizedExchange) -> ExchangeOut:
        """Project a FinalizedExchange onto the wire shape."""
        o = f.outcome
        return cls(
            session_id=session_id,
            exchange_id=o.exchange.id,
            answer=o.exchange.answer,
            answer_shortened=o.exchange.answer_shortened,
            folded_exchange_ids=[x.id for x in o.folded],
            qa_summary_bytes=len(o.qa_summary.encode("utf-8")),
            qa_summary_compressed=f.qa_summary_compressed,
            cache_expired=[f"{c.tool_name}: expired" for c in o.expired],
            cache=[c.describe() for c in f.cache],
            redacted=f.redacted,
        )


class ImportSessionOut(BaseModel):
    """What an import created."""

    session_id: str
    entries: int
    summaries: int
    exchanges: int
    cached_results: int
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Credentials replaced by [REDACTED:<kind>] before storing: kind -> count.",
    )


class ClearSessionOut(BaseModel):
    """What clear_session removed."""

    session_id: str
    entries_removed: int


class SessionConfigOut(BaseModel):
    """The session's effective settings after the change."""

    session_id: str
    config: ConversationPolicy


class CachePutOut(BaseModel):
    """A cached tool result."""

    session_id: str
    key: str
    state: str

    @classmethod
    def of(cls, session_id: str, c: CachedResult) -> CachePutOut:
        """Project a CachedResult onto the wire shape."""
        return cls(session_id=session_id, key=c.key, state=c.describe())


class CacheLookupOut(BaseModel):
    """A cache hit (its life reset) or a miss."""

    session_id: str
    hit: bool
    result: JsonValue = None
    remaining: int | None = None
    duration: int | None = None
