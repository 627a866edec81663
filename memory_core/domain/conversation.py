"""Value objects of conversation memory: sessions, entries, summaries, exchanges, cached results."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from memory_core.domain.frozen import Frozen as _Frozen

__all__ = [
    "CachedResult",
    "CompressionPlan",
    "Entry",
    "EntryDraft",
    "EntryType",
    "Exchange",
    "ExchangeOutcome",
    "PendingSummary",
    "Role",
    "SessionExport",
    "SessionInfo",
    "SessionStats",
    "Summary",
    "SummaryDraft",
    "SummarySource",
    "canonical_json",
]


def canonical_json(value: JsonValue) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text (cache keys, tests)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class EntryType(StrEnum):
    """What an entry records."""

    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    CONTEXT = "context"


class Role(StrEnum):
    """Who an entry speaks for."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


SummarySource = Literal["summarizer", "client", "fallback"]


class EntryDraft(_Frozen):
    """An entry before it is stored (checked, token-counted, not yet numbered)."""

    type: EntryType
    role: Role
    content: str
    tool_name: str | None = None
    arguments: dict[str, JsonValue] | None = None
    source: str | None = None
    is_error: bool = False
    token_count: int


class Entry(EntryDraft):
    """One recorded entry; `id` is its number within the session (1, 2, 3...)."""

    id: int
    timestamp: datetime
    compressed: bool = False
    summary_id: int | None = None


class SummaryDraft(_Frozen):
    """A summary about to replace `entry_ids`."""

    text: str
    entry_ids: tuple[int, ...]
    token_count: int
    original_tokens: int
    covers_from: datetime
    covers_until: datetime
    source: SummarySource

    @property
    def ratio(self) -> float:
        """Summary tokens over the tokens of the entries it replaced."""
        return round(self.token_count / max(1, self.original_tokens), 4)

    def stored(self, number: int, created_at: datetime) -> Summary:
        """The summary as a store records it: numbered within its session."""
        return Summary(
            id=number,
            text=self.text,
            entry_ids=self.entry_ids,
            token_count=self.token_count,
            original_tokens=self.original_tokens,
            ratio=self.ratio,
            covers_from=self.covers_from,
            covers_until=self.covers_until,
            source=self.source,
            created_at=created_at,
        )


class Summary(_Frozen):
    """A stored summary; `id` is its number within the session."""

    id: int
    text: str
    entry_ids: tuple[int, ...]
    token_count: int
    original_tokens: int
    ratio: float
    covers_from: datetime
    covers_until: datetime
    source: SummarySource
    created_at: datetime


class Exchange(_Frozen):
    """One finalised question/answer cycle."""

    id: int
    question: str
    answer: str
    answer_shortened: bool
    timestamp: datetime
    folded: bool


class CachedResult(_Frozen):
    """A cached tool result that lives for `duration` exchanges after its last use."""

    key: str
    tool_name: str
    parameters: JsonValue
    result: JsonValue
    duration: int
    remaining: int
    created_at: datetime

    def describe(self) -> str:
        """The cache-state line: 'tool(params): 2/3 exchanges remaining'."""
        params = canonical_json(self.parameters)
        if len(params) > 80:
            params = params[:77] + "..."
        return f"{self.tool_name}({params}): {self.remaining}/{self.duration} exchanges remaining"


class ExchangeOutcome(_Frozen):
    """What finalising an exchange did."""

    exchange: Exchange
    folded: tuple[Exchange, ...]
    qa_summary: str
    expired: tuple[CachedResult, ...]


class PendingSummary(_Frozen):
    """Entries the client was asked to summarise, and when it was asked."""

    entry_ids: tuple[int, ...]
    requested_at_entry: int  # the session's last entry number when the request was made


class SessionInfo(_Frozen):
    """A session's own row."""

    project: str
    session_id: str
    created_at: datetime
    updated_at: datetime
    config: dict[str, JsonValue] = Field(default_factory=dict)
    qa_summary: str = ""
    qa_summary_from: datetime | None = None
    qa_summary_until: datetime | None = None
    last_entry: int = 0
    pending: PendingSummary | None = None


class SessionStats(_Frozen):
    """Counts of one session."""

    total_entries: int
    active_entries: int
    compressed_entries: int
    summaries: int
    total_tokens: int
    active_tokens: int
    exchanges: int
    active_exchanges: int
    cache: tuple[CachedResult, ...]


class CompressionPlan(_Frozen):
    """The entries one compression would replace, oldest first."""

    entries: tuple[Entry, ...]
    reason: str

    @property
    def original_tokens(self) -> int:
        """Tokens of the entries to replace."""
        return sum(e.token_count for e in self.entries)


class SessionExport(BaseModel):
    """A whole session as plain data: what export_session writes and import_session reads."""

    # defer_build: built at the first export or import, not by every process that imports
    # the conversation models (a session-start hook notes its text as a conversation entry).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    format: Literal["memstrata.session/1"] = "memstrata.session/1"
    session_id: str
    created_at: datetime
    updated_at: datetime
    config: dict[str, JsonValue] = Field(default_factory=dict)
    qa_summary: str = ""
    qa_summary_from: datetime | None = None
    qa_summary_until: datetime | None = None
    entries: list[Entry] = Field(default_factory=list)
    summaries: list[Summary] = Field(default_factory=list)
    exchanges: list[Exchange] = Field(default_factory=list)
    cache: list[CachedResult] = Field(default_factory=list)
