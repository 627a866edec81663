"""The interfaces conversation memory depends on: its store and a summarizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol

from pydantic import JsonValue

from memory_core.domain.conversation import (
    CachedResult,
    Entry,
    EntryDraft,
    Exchange,
    ExchangeOutcome,
    PendingSummary,
    SessionExport,
    SessionInfo,
    Summary,
    SummaryDraft,
)

__all__ = ["ConversationStore", "FoldFn", "SessionNotes", "Summarizer"]

# Given the running Q&A summary and the exchanges leaving the active window (oldest first),
# return the new running summary. Pure; the store calls it inside its transaction.
FoldFn = Callable[[str, Sequence[Exchange]], str]

# The texts of a session's scratchpad snippets, most recently used first ([] when none).
SessionNotes = Callable[[str], Awaitable[list[str]]]


class Summarizer(Protocol):
    """Writes a summary of a transcript (an LLM endpoint the operator configures)."""

    name: str

    async def summarize(self, instructions: str, transcript: str, max_tokens: int) -> str:
        """Return the summary text.

        Raises:
            SummarizerError: The endpoint failed or answered with no text.
        """
        ...


class ConversationStore(Protocol):
    """Storage of sessions, entries, summaries, exchanges and cached tool results.

    Every method is scoped to one (project, session_id). Methods that need the session raise
    SessionNotFoundError when it does not exist.
    """

    async def create_session(
        self, project: str, session_id: str, now: datetime
    ) -> tuple[SessionInfo, bool]:
        """Create the session unless it exists; return it and whether it was created."""
        ...

    async def get_session(self, project: str, session_id: str) -> SessionInfo:
        """The session's own row."""
        ...

    async def list_sessions(self, project: str, limit: int) -> list[SessionInfo]:
        """The most recently updated sessions of a project."""
        ...

    async def add_entry(
        self, project: str, session_id: str, draft: EntryDraft, now: datetime
    ) -> Entry:
        """Store an entry with the session's next number."""
        ...

    async def add_entries(
        self, project: str, session_id: str, drafts: Sequence[EntryDraft], now: datetime
    ) -> list[Entry]:
        """Store entries with the session's next numbers, in order, in one transaction."""
        ...

    async def entries(self, project: str, session_id: str, *, active_only: bool) -> list[Entry]:
        """Entries oldest first; only uncompressed ones when `active_only`."""
        ...

    async def summaries(self, project: str, session_id: str) -> list[Summary]:
        """Summaries oldest first."""
        ...

    async def exchanges(
        self, project: str, session_id: str, *, active_only: bool
    ) -> list[Exchange]:
        """Exchanges oldest first; only unfolded ones when `active_only`."""
        ...

    async def apply_summary(
        self, project: str, session_id: str, draft: SummaryDraft, now: datetime
    ) -> Summary | None:
        """Store a summary and mark its entries compressed, in one transaction.

        Returns None (and writes nothing) if any of those entries is missing or already
        compressed, so two compressions racing over one session never double-count. Clears
        the pending client request when it covered the same entries.
        """
        ...

    async def set_pending(
        self, project: str, session_id: str, pending: PendingSummary | None
    ) -> None:
        """Remember (or forget) which entries the client was asked to summarise."""
        ...

    async def set_config(
        self, project: str, session_id: str, config: dict[str, JsonValue], now: datetime
    ) -> None:
        """Replace the session's policy overrides."""
        ...

    async def finalize_exchange(
        self,
        project: str,
        session_id: str,
        exchange: tuple[str, str, bool],
        now: datetime,
        max_active: int,
        fold: FoldFn,
    ) -> ExchangeOutcome:
        """Store a (question, answer, shortened) exchange, fold the overflow, age the cache.

        In one transaction: the exchange is stored; unfolded exchanges beyond the newest
        `max_active` are folded into the running summary through `fold`; every cached tool
        result loses one exchange of life and those at zero are deleted.
        """
        ...

    async def replace_qa_summary(
        self, project: str, session_id: str, expected: str, new: str
    ) -> bool:
        """Set the running Q&A summary if it still equals `expected` (compare and set)."""
        ...

    async def cache_put(self, project: str, session_id: str, item: CachedResult) -> None:
        """Store or replace a cached tool result."""
        ...

    async def cache_get(self, project: str, session_id: str, key: str) -> CachedResult | None:
        """A cached result by key, its remaining life reset to its duration on a hit."""
        ...

    async def cache_list(self, project: str, session_id: str) -> list[CachedResult]:
        """Every cached result of the session."""
        ...

    async def export_session(self, project: str, session_id: str) -> SessionExport:
        """The whole session, read in one snapshot."""
        ...

    async def import_session(self, project: str, data: SessionExport) -> None:
        """Create a session from an export (ids kept), in one transaction.

        Raises:
            ConflictError: A session with that id already exists.
        """
        ...

    async def delete_session(self, project: str, session_id: str) -> int:
        """Delete the session and everything in it; return how many entries went."""
        ...
