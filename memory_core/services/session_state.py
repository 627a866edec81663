"""A conversation session's memory state, as a model reads it, and the events between two marks.

The view (`SessionStateService.read`, `session_view_text`) is what the session resource
`memory://{project}/session/{session_id}`, `memstrata session` and the dashboard show: entries
active and compressed, the summaries with their sizes and ratios, the compressions by source,
the cached tool results with their exchanges remaining, the token totals and the text
`get_session_context` would hand the model now.

The events (`SessionStateService.events`) name what changed between two marks of a session
(ports.change_marks) with the spec's names: `entry:added` (with the entry's type),
`compressed` (with the tokens saved), `session:cleared`. They carry counts, numbers and types,
never an entry's or a summary's text: a log line may reach a client that may not read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import SessionInfo, SessionStats, Summary
from memory_core.domain.inputs import check_project, check_session
from memory_core.ports.change_marks import SessionMark
from memory_core.ports.conversations import ConversationStore
from memory_core.services.conversations import ConversationService, SessionContext

__all__ = ["SessionEvent", "SessionState", "SessionStateService", "session_view_text"]

EventValue = int | str


@dataclass(frozen=True)
class SessionState:
    """Everything the view shows of one session, read through the conversation service."""

    project: str
    info: SessionInfo
    stats: SessionStats
    summaries: list[Summary]
    context: SessionContext
    policy: ConversationPolicy
    summarizer: str | None
    token_budget: int | None = None


@dataclass(frozen=True)
class SessionEvent:
    """One change of a session, as one log line: `name key=value ...`, never memory text."""

    name: str
    project: str
    session_id: str
    details: dict[str, EventValue] = field(default_factory=dict)

    def line(self) -> str:
        """`entry:added session=s1 project=p entry=4 type=message tokens=12`."""
        parts = [self.name, f"session={self.session_id}", f"project={self.project}"]
        parts += [f"{k}={v}" for k, v in self.details.items()]
        return " ".join(parts)


class SessionStateService:
    """Reads of the view and of the events, over the conversation service and its store."""

    def __init__(self, conversations: ConversationService, store: ConversationStore) -> None:
        self._conversations = conversations
        self._store = store

    async def read(
        self, project: str, session_id: str, token_budget: int | None = None
    ) -> SessionState:
        """The session's state now.

        Raises:
            SessionNotFoundError: No such session in the project.
        """
        project = check_project(project)
        sid = _session_id(session_id)
        info = await self._store.get_session(project, sid)
        conv = self._conversations
        return SessionState(
            project=project,
            info=info,
            stats=await conv.stats(project, sid),
            summaries=await conv.summaries(project, sid),
            context=await conv.context(project, sid, token_budget),
            policy=await conv.policy(project, sid),
            summarizer=conv.summarizer_name,
            token_budget=token_budget,
        )

    async def events(
        self,
        project: str,
        session_id: str,
        before: SessionMark | None,
        after: SessionMark | None,
    ) -> list[SessionEvent]:
        """What happened to a session between two of its marks (None: it did not exist).

        New entries and summaries are read by number, so each is told once whichever
        process wrote it; several entries added between two marks give several events.
        """
        if before == after:
            return []

        def event(name: str, **details: EventValue) -> SessionEvent:
            return SessionEvent(name, project, session_id, details)

        if after is None:
            return [event("session:cleared")]
        out: list[SessionEvent] = []
        if before is not None and before.created_at != after.created_at:
            out.append(event("session:cleared"))  # cleared, then started again under its id
            before = None
        if before is None:
            empty = after.last_entry == 0 and after.summaries == 0 and after.exchanges == 0
            if empty:
                return [*out, event("session:started")]
            return [*out, event("session:imported", entries=after.last_entry)]
        return out + await self._changes(project, session_id, before, after)

    async def _changes(
        self, project: str, session_id: str, before: SessionMark, after: SessionMark
    ) -> list[SessionEvent]:
        """The events between two marks of one and the same session."""

        def event(name: str, **details: EventValue) -> SessionEvent:
            return SessionEvent(name, project, session_id, details)

        out: list[SessionEvent] = []
        if after.last_entry > before.last_entry:
            out += await self._added(project, session_id, before.last_entry)
        if after.summaries > before.summaries:
            out += await self._compressed(project, session_id, before.summaries)
        if after.pending and not before.pending:
            out.append(event("summary:requested"))
        if after.exchanges > before.exchanges:
            out.append(event("exchange:finalized", exchanges=after.exchanges))
        if after.cache != before.cache:
            out.append(event("cache:changed", results=after.cache[0]))
        return out

    async def _added(self, project: str, session_id: str, after: int) -> list[SessionEvent]:
        """`entry:added` for each entry numbered above `after`."""
        entries = await self._store.entries(project, session_id, active_only=False)
        return [
            SessionEvent(
                "entry:added",
                project,
                session_id,
                {"entry": e.id, "type": e.type.value, "tokens": e.token_count},
            )
            for e in entries
            if e.id > after
        ]

    async def _compressed(self, project: str, session_id: str, after: int) -> list[SessionEvent]:
        """`compressed` (with the tokens saved) for each summary numbered above `after`."""
        return [
            SessionEvent(
                "compressed",
                project,
                session_id,
                {
                    "summary": s.id,
                    "entries": len(s.entry_ids),
                    "tokens_saved": s.original_tokens - s.token_count,
                    "source": s.source,
                },
            )
            for s in await self._store.summaries(project, session_id)
            if s.id > after
        ]


def _session_id(value: str) -> str:
    checked = check_session(value)
    assert checked is not None
    return checked


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC")


def _span(ids: tuple[int, ...]) -> str:
    """'entries 1-6' for a run, else the numbers (at most 8 shown)."""
    if not ids:
        return "no entries"
    if list(ids) == list(range(ids[0], ids[-1] + 1)) and len(ids) > 1:
        return f"entries {ids[0]}-{ids[-1]}"
    shown = ", ".join(str(i) for i in ids[:8])
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    return f"entr{'y' if len(ids) == 1 else 'ies'} {shown}{more}"


def _saved(tokens: int) -> str:
    # A digest of a few short entries can be longer than they were: say so plainly.
    return f"{tokens:,} saved" if tokens >= 0 else f"{-tokens:,} more than it replaced"


def session_view_text(state: SessionState) -> str:
    """The memory-state view, written for a model (and a person at a terminal)."""
    info, stats, policy = state.info, state.stats, state.policy
    by_source = {"summarizer": 0, "client": 0, "fallback": 0}
    for s in state.summaries:
        by_source[s.source] += 1
    summary_bytes = sum(len(s.text.encode()) for s in state.summaries)
    lines = [
        f"Session: {info.session_id} | Project: {state.project} | "
        f"Exchanges: {stats.exchanges} | Summary: {summary_bytes:,} bytes | "
        f"LLM compressions: {by_source['summarizer'] + by_source['client']}",
        f"Created {_when(info.created_at)}, last written {_when(info.updated_at)}.",
        "",
        f"Entries: {stats.total_entries} ({stats.active_entries} active, "
        f"{stats.compressed_entries} compressed). Tokens: {stats.total_tokens:,} recorded, "
        f"{stats.active_tokens:,} active (compresses over {policy.compress_token_threshold:,} "
        f"active tokens or {policy.compress_entry_limit} active entries; the newest "
        f"{policy.recent_window} stay word for word).",
        f"Compressions: {len(state.summaries)} (summarizer {by_source['summarizer']}, "
        f"client {by_source['client']}, fallback {by_source['fallback']}); summarizer "
        f"configured: {state.summarizer or 'none'}.",
    ]
    if info.pending is not None:
        lines.append(
            f"Waiting for the client's summary of {_span(info.pending.entry_ids)} "
            f"(asked at entry {info.pending.requested_at_entry})."
        )
    if state.summaries:
        lines.append("Summaries:")
        lines += [
            f"  #{s.id} {_span(s.entry_ids)}: {len(s.text.encode()):,} bytes, "
            f"{s.token_count:,} tokens for {s.original_tokens:,} "
            f"(ratio {s.ratio:.2f}, {_saved(s.original_tokens - s.token_count)}), "
            f"by {s.source}, {_when(s.created_at)}"
            for s in state.summaries
        ]
    folded = stats.exchanges - stats.active_exchanges
    lines.append(
        f"Q&A exchanges: {stats.exchanges} ({stats.active_exchanges} whole, {folded} folded "
        f"into a {len(info.qa_summary.encode()):,}-byte running summary)."
    )
    if stats.cache:
        lines.append(f"Cached tool results ({len(stats.cache)}):")
        lines += [f"  {c.describe()}" for c in stats.cache]
    else:
        lines.append("Cached tool results: none.")
    ctx = state.context
    budget = f" within {state.token_budget:,} tokens" if state.token_budget else ""
    omitted = ctx.omitted_summaries + ctx.omitted_entries + ctx.omitted_exchanges
    left_out = f"; {omitted} parts left out by the budget" if omitted else ""
    lines += [
        "",
        f"What get_session_context hands the model now{budget} ({ctx.tokens:,} tokens: "
        f"{len(ctx.summaries)} summaries, {len(ctx.entries)} entries, "
        f"{len(ctx.exchanges)} exchanges, {ctx.cached_results} cached results{left_out}):",
        "-----",
        ctx.text if ctx.text else "(nothing yet)",
        "-----",
    ]
    return "\n".join(lines)
