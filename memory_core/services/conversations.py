"""ConversationService: sessions, entries, compression into summaries, Q&A cycles, result cache.

Importing a session (its checks and redaction) is services.session_imports.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import structlog
from pydantic import JsonValue, ValidationError

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.condense import (
    cache_key,
    cached_line,
    compress_qa_summary,
    compression_reason,
    condensed_transcript,
    fallback_summary,
    fit_context,
    fold_line,
    plan_compression,
    render_transcript,
    shorten_bytes,
    summarization_prompt,
    transcript_pages,
)
from memory_core.domain.conversation import (
    CachedResult,
    CompressionPlan,
    Entry,
    EntryDraft,
    EntryType,
    Exchange,
    ExchangeOutcome,
    PendingSummary,
    Role,
    SessionExport,
    SessionInfo,
    SessionStats,
    Summary,
    SummaryDraft,
    SummarySource,
    canonical_json,
)
from memory_core.domain.inputs import (
    check_project,
    check_session,
    check_text,
)
from memory_core.domain.redaction import Redaction, RedactionPolicy, redact_json, redact_text
from memory_core.domain.session_notes import notes_digest, notes_transcript
from memory_core.domain.tokens import CHARS_PER_TOKEN, COUNTER_NAME, count_tokens
from memory_core.errors import (
    ConfirmationRequiredError,
    ConflictError,
    InvalidInputError,
    StorageError,
    SummarizerError,
)
from memory_core.ports import Clock
from memory_core.ports.conversations import (
    ConversationStore,
    SessionNotes,
    Summarizer,
)
from memory_core.services.session_imports import (
    MAX_SOURCE,
    MAX_TOOL_NAME,
    check_json_size,
    read_session_export,
    redacted_object,
    redacted_session,
)

__all__ = [
    "CompressionResult",
    "ConversationService",
    "ImportedSession",
    "NewEntry",
    "RequestPage",
    "SessionContext",
    "SourceChoice",
    "SummaryRequest",
]

log = structlog.get_logger(__name__)

SourceChoice = Literal["auto", "summarizer", "client", "fallback"]

_DEFAULT_ROLE = {
    EntryType.TOOL_CALL: Role.ASSISTANT,
    EntryType.TOOL_RESULT: Role.SYSTEM,
    EntryType.CONTEXT: Role.SYSTEM,
}
_MAX_CACHE_DURATION = 10_000


@dataclass(frozen=True)
class SummaryRequest:
    """Entries handed to the client's own model, with what to write and how long.

    `transcript` is condensed (each entry cut, the whole capped); `cut_entry_ids` were
    shortened or left out, and the whole transcript is `pages` pages of `read_request`.
    """

    entry_ids: tuple[int, ...]
    instructions: str
    transcript: str
    target_tokens: int
    cut_entry_ids: tuple[int, ...] = ()
    pages: int = 1


@dataclass(frozen=True)
class RequestPage:
    """One page of the whole transcript of a pending summary request."""

    entry_ids: tuple[int, ...]
    page: int
    pages: int
    transcript: str


@dataclass(frozen=True)
class CompressionResult:
    """What a compression did (or asked for).

    summary_pending: a summary asked of the client earlier is still due (the request itself
    is sent once; `read_request` reads it again).
    """

    status: Literal[
        "compressed", "summary_requested", "summary_pending", "not_needed", "too_few_entries"
    ]
    reason: str
    summary: Summary | None = None
    request: SummaryRequest | None = None
    tokens_saved: int = 0


@dataclass(frozen=True)
class SessionContext:
    """A session laid out for a model, and what the budget left out."""

    text: str
    summaries: list[Summary]
    entries: list[Entry]
    exchanges: list[Exchange]
    omitted_summaries: int
    omitted_entries: int
    tokens: int
    cached_results: int = 0
    omitted_cached_results: int = 0
    omitted_exchanges: int = 0
    omitted_qa_lines: int = 0  # lines of the Q&A summary (one per folded exchange)


@dataclass(frozen=True)
class AddedEntry:
    """An entry as stored, the session's active counts after it, the compression it set off."""

    entry: Entry
    compression: CompressionResult | None
    redacted: dict[str, int] = field(default_factory=dict)
    active_entries: int = 0
    active_tokens: int = 0


@dataclass(frozen=True)
class NewEntry:
    """One entry to record with `add_entries` (the fields `add_entry` takes)."""

    type: EntryType
    content: str = ""
    role: Role | None = None
    tool_name: str | None = None
    arguments: dict[str, JsonValue] | None = None
    source: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ImportedSession:
    """A session as imported (redacted), and what the redaction took out."""

    session: SessionExport
    redacted: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FinalizedExchange:
    """A finalised exchange and what it set off."""

    outcome: ExchangeOutcome
    qa_summary_compressed: bool
    cache: list[CachedResult] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)


class ConversationService:
    """Use cases of conversation memory. Every call names its project and session."""

    def __init__(
        self,
        *,
        store: ConversationStore,
        clock: Clock,
        policy: ConversationPolicy,
        summarizer: Summarizer | None = None,
        redaction: RedactionPolicy | None = None,
        session_notes: SessionNotes | None = None,
    ) -> None:
        self._redaction = redaction or RedactionPolicy()
        self._session_notes = session_notes
        self._store = store
        self._clock = clock
        self._policy = policy
        self._summarizer = summarizer

    @property
    def summarizer_name(self) -> str | None:
        """The configured summarizer, if any."""
        return self._summarizer.name if self._summarizer else None

    @property
    def counter_name(self) -> str:
        """How tokens are counted (the one counter of every budget)."""
        return COUNTER_NAME

    # --- sessions -------------------------------------------------------------------------

    async def start(self, project: str, session_id: str | None) -> tuple[SessionInfo, bool]:
        """Open a session (a new random id when none is given); an existing one is returned."""
        project = check_project(project)
        sid = _session_id(session_id) if session_id is not None else uuid.uuid4().hex
        info, created = await self._store.create_session(project, sid, self._clock.now())
        if created:
            log.info("conversation.session_started", project=project, session_id=sid)
        return info, created

    async def list_sessions(self, project: str, limit: int) -> list[SessionInfo]:
        """The most recently updated sessions."""
        if limit < 1:
            raise InvalidInputError("limit", "must be at least 1")
        return await self._store.list_sessions(check_project(project), limit)

    async def policy(self, project: str, session_id: str) -> ConversationPolicy:
        """The session's effective policy: the server's, with the session's overrides."""
        info = await self._store.get_session(check_project(project), _session_id(session_id))
        return self._effective(info)

    def _effective(self, info: SessionInfo) -> ConversationPolicy:
        if not info.config:
            return self._policy
        return self._policy.model_validate({**self._policy.model_dump(), **info.config})

    async def update_config(
        self, project: str, session_id: str, changes: dict[str, JsonValue]
    ) -> ConversationPolicy:
        """Override policy fields for one session; a null value restores the server default."""
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        known = set(ConversationPolicy.model_fields)
        for name in changes:
            if name not in known:
                raise InvalidInputError(
                    f"changes.{name}", f"is not a setting; allowed: {', '.join(sorted(known))}"
                )
        config: dict[str, JsonValue] = {
            k: v for k, v in {**info.config, **changes}.items() if v is not None
        }
        try:
            effective = self._policy.model_validate({**self._policy.model_dump(), **config})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "changes"
            raise InvalidInputError(
                f"changes.{where}" if first["loc"] else where, first["msg"]
            ) from None
        await self._store.set_config(project, sid, config, self._clock.now())
        log.info("conversation.config_updated", project=project, session_id=sid, changes=changes)
        return effective

    async def clear(self, project: str, session_id: str, *, confirm: bool) -> int:
        """Delete a session and everything in it."""
        project, sid = check_project(project), _session_id(session_id)
        if not confirm:
            raise ConfirmationRequiredError("clear_session")
        removed = await self._store.delete_session(project, sid)
        log.info("conversation.session_cleared", project=project, session_id=sid, entries=removed)
        return removed

    # --- entries ----------------------------------------------------------------------------

    async def add_entry(
        self,
        project: str,
        session_id: str,
        *,
        type: EntryType,
        content: str = "",
        role: Role | None = None,
        tool_name: str | None = None,
        arguments: dict[str, JsonValue] | None = None,
        source: str | None = None,
        is_error: bool = False,
    ) -> AddedEntry:
        """Record an entry; compress older entries when a threshold is crossed."""
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        policy = self._effective(info)
        report = Redaction()
        draft = self._draft(
            policy, type, content, role, tool_name, arguments, source, is_error, report
        )
        entry = await self._store.add_entry(project, sid, draft, self._clock.now())
        log.info(
            "conversation.entry_added",
            project=project,
            session_id=sid,
            entry=entry.id,
            type=entry.type.value,
            tokens=entry.token_count,
        )
        # The entry is committed: a failure of the follow-up compression must not make the
        # call look failed (a retry would store the entry twice). The next entry retries it.
        compression: CompressionResult | None = None
        if policy.auto_compress:
            try:
                compression = await self._auto_compress(project, sid, policy)
            except (ConflictError, StorageError) as exc:
                log.warning(
                    "conversation.compress_deferred",
                    project=project,
                    session_id=sid,
                    error=exc.__class__.__name__,  # `type` is the entry type here
                )
        active = await self._store.entries(project, sid, active_only=True)
        return AddedEntry(
            entry=entry,
            compression=compression,
            redacted=report.as_dict(),
            active_entries=len(active),
            active_tokens=sum(e.token_count for e in active),
        )

    async def add_entries(
        self, project: str, session_id: str, entries: Sequence[NewEntry]
    ) -> list[Entry | InvalidInputError]:
        """Record entries in order, in one transaction; compress (when due) once after them.

        For a writer of many entries at once (a transcript capture): one write and one
        threshold check for the lot, where `add_entry` takes a write, two reads of the active
        entries and a check per entry. An entry this store refuses is left out, its error in
        its place in the result; the others are stored, each redacted as `add_entry` does.
        """
        project, sid = check_project(project), _session_id(session_id)
        policy = self._effective(await self._store.get_session(project, sid))
        report = Redaction()
        drafts: list[EntryDraft] = []
        refused: list[InvalidInputError | None] = []
        for e in entries:
            try:
                drafts.append(
                    self._draft(
                        policy,
                        e.type,
                        e.content,
                        e.role,
                        e.tool_name,
                        e.arguments,
                        e.source,
                        e.is_error,
                        report,
                    )
                )
                refused.append(None)
            except InvalidInputError as exc:
                refused.append(exc)
        stored = iter(await self._store.add_entries(project, sid, drafts, self._clock.now()))
        log.info("conversation.entries_added", project=project, session_id=sid, count=len(drafts))
        if policy.auto_compress and drafts:
            try:
                await self._auto_compress(project, sid, policy)
            except (ConflictError, StorageError) as exc:
                # The entries are committed (see add_entry); the next write retries.
                log.warning(
                    "conversation.compress_deferred",
                    project=project,
                    session_id=sid,
                    error=exc.__class__.__name__,
                )
        return [next(stored) if exc is None else exc for exc in refused]

    def _draft(
        self,
        policy: ConversationPolicy,
        type: EntryType,
        content: str,
        role: Role | None,
        tool_name: str | None,
        arguments: dict[str, JsonValue] | None,
        source: str | None,
        is_error: bool,
        report: Redaction,
    ) -> EntryDraft:
        if role is None:
            if type is EntryType.MESSAGE:
                raise InvalidInputError(
                    "role", "is required for a message: user, assistant or system"
                )
            role = _DEFAULT_ROLE[type]
        _check_applicable(type, tool_name, arguments, source, is_error)
        if type is EntryType.TOOL_CALL:
            tool_name = check_text("tool_name", tool_name or "", max_chars=MAX_TOOL_NAME)
            check_json_size("arguments", arguments)
            # A call is its name and arguments; words alongside them are optional.
            text = content.strip()
            if text:
                text = check_text("content", text, max_chars=policy.max_entry_chars)
        else:
            text = check_text("content", content, max_chars=policy.max_entry_chars)
            if tool_name is not None:
                tool_name = check_text("tool_name", tool_name, max_chars=MAX_TOOL_NAME)
        if source is not None:
            source = check_text("source", source, max_chars=MAX_SOURCE)
        # Credentials never reach the table: the entry is stored, counted and summarised
        # redacted, and the result says what was taken out.
        text = redact_text(text, self._redaction, report)[0]
        arguments = redacted_object(arguments, self._redaction, report)
        if tool_name is not None:
            tool_name = redact_text(tool_name, self._redaction, report)[0]
        if source is not None:
            source = redact_text(source, self._redaction, report)[0]
        counted = text
        if type is EntryType.TOOL_CALL:
            counted = f"{tool_name} {canonical_json(arguments or {})} {text}"
        return EntryDraft(
            type=type,
            role=role,
            content=text,
            tool_name=tool_name,
            arguments=arguments,
            source=source,
            is_error=is_error,
            token_count=count_tokens(counted),
        )

    # --- reading ----------------------------------------------------------------------------

    async def context(
        self, project: str, session_id: str, token_budget: int | None = None
    ) -> SessionContext:
        """Summaries, then the active entries and exchanges, within `token_budget` tokens.

        The text's count never exceeds the budget (`fit_context` says what is spent first);
        below the empty layout's ~22 tokens it is empty and every part counts as omitted.
        """
        project, sid = check_project(project), _session_id(session_id)
        if token_budget is not None and token_budget < 1:
            raise InvalidInputError("token_budget", "must be at least 1 when given")
        info = await self._store.get_session(project, sid)
        summaries = await self._store.summaries(project, sid)
        entries = await self._store.entries(project, sid, active_only=True)
        exchanges = await self._store.exchanges(project, sid, active_only=True)
        cache = await self._store.cache_list(project, sid)
        span = (
            (info.qa_summary_from, info.qa_summary_until)
            if info.qa_summary_from and info.qa_summary_until
            else None
        )
        # Every part is paid for within the budget, Q&A included (issue 35, N2).
        fitted = fit_context(
            summaries,
            info.qa_summary,
            span,
            entries,
            exchanges,
            [cached_line(c) for c in cache],
            token_budget,
        )
        return SessionContext(
            text=fitted.text,
            summaries=fitted.summaries,
            entries=fitted.entries,
            exchanges=fitted.exchanges,
            omitted_summaries=fitted.omitted_summaries,
            omitted_entries=fitted.omitted_entries,
            tokens=count_tokens(fitted.text),
            cached_results=len(fitted.cached),
            omitted_cached_results=fitted.omitted_cached,
            omitted_exchanges=fitted.omitted_exchanges,
            omitted_qa_lines=fitted.omitted_qa_lines,
        )

    async def stats(self, project: str, session_id: str) -> SessionStats:
        """Counts of entries, summaries, tokens, exchanges and the cache state."""
        project, sid = check_project(project), _session_id(session_id)
        entries = await self._store.entries(project, sid, active_only=False)
        summaries = await self._store.summaries(project, sid)
        exchanges = await self._store.exchanges(project, sid, active_only=False)
        cache = await self._store.cache_list(project, sid)
        active = [e for e in entries if not e.compressed]
        return SessionStats(
            total_entries=len(entries),
            active_entries=len(active),
            compressed_entries=len(entries) - len(active),
            summaries=len(summaries),
            total_tokens=sum(e.token_count for e in entries),
            active_tokens=sum(e.token_count for e in active),
            exchanges=len(exchanges),
            active_exchanges=sum(1 for x in exchanges if not x.folded),
            cache=tuple(cache),
        )

    async def summaries(self, project: str, session_id: str) -> list[Summary]:
        """The session's compression history: every summary, oldest first."""
        return await self._store.summaries(check_project(project), _session_id(session_id))

    # --- compression ------------------------------------------------------------------------

    async def compress(
        self, project: str, session_id: str, source: SourceChoice = "auto"
    ) -> CompressionResult:
        """Compress on request: every eligible entry, whatever the thresholds say."""
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        policy = self._effective(info)
        active = await self._store.entries(project, sid, active_only=True)
        plan = plan_compression(active, policy, "requested")
        if plan is None:
            return CompressionResult(
                status="too_few_entries",
                reason=f"fewer than {policy.min_compress_entries} entries outside the newest "
                f"{policy.recent_window}",
            )
        return await self._compress(project, info, plan, policy, source, automatic=False)

    async def _auto_compress(
        self, project: str, sid: str, policy: ConversationPolicy
    ) -> CompressionResult | None:
        active = await self._store.entries(project, sid, active_only=True)
        reason = compression_reason(sum(e.token_count for e in active), len(active), policy)
        if reason is None:
            return None
        plan = plan_compression(active, policy, reason)
        if plan is None:
            return CompressionResult(
                status="too_few_entries",
                reason=f"{reason}, but fewer than {policy.min_compress_entries} entries are "
                "outside the recent window",
            )
        info = await self._store.get_session(project, sid)
        return await self._compress(project, info, plan, policy, "auto", automatic=True)

    async def _compress(
        self,
        project: str,
        info: SessionInfo,
        plan: CompressionPlan,
        policy: ConversationPolicy,
        source: SourceChoice,
        *,
        automatic: bool,
    ) -> CompressionResult:
        target = max(16, math.ceil(plan.original_tokens * policy.target_ratio))
        notes = await self._notes(info.session_id)
        use_summarizer = source == "summarizer" or (source == "auto" and self._summarizer)
        if use_summarizer:
            if self._summarizer is None:
                raise InvalidInputError(
                    "source", "'summarizer' needs MEMSTRATA_SUMMARIZER_URL; use auto or fallback"
                )
            try:
                text = await self._summarizer.summarize(
                    summarization_prompt(target),
                    render_transcript(plan.entries) + notes_transcript(notes),
                    target,
                )
                return await self._apply(project, info, plan, text, "summarizer")
            except SummarizerError as exc:
                log.warning(
                    "conversation.summarizer_failed",
                    project=project,
                    session_id=info.session_id,
                    reason=exc.reason,
                )
                if source == "summarizer":
                    raise
                return await self._apply(
                    project, info, plan, self._fallback(plan, target, notes), "fallback"
                )
        if source == "fallback":
            return await self._apply(
                project, info, plan, self._fallback(plan, target, notes), "fallback"
            )
        return await self._ask_client(project, info, plan, policy, automatic=automatic, notes=notes)

    async def _ask_client(
        self,
        project: str,
        info: SessionInfo,
        plan: CompressionPlan,
        policy: ConversationPolicy,
        *,
        automatic: bool,
        notes: list[str],
    ) -> CompressionResult:
        """The client's own model writes the summary: hand over the entries.

        Unless the client already had its chance for this many entries and ignored it: then
        the server must bound the session itself, with a fallback summary.
        """
        pending = info.pending
        if pending is not None and automatic:
            waited = info.last_entry - pending.requested_at_entry
            if waited > policy.client_summary_grace:
                requested = set(pending.entry_ids)  # once, not per entry: thousands at a capture
                stale = [e for e in plan.entries if e.id in requested]
                if len(stale) >= policy.min_compress_entries:
                    plan = CompressionPlan(entries=tuple(stale), reason=plan.reason)
                target = max(16, math.ceil(plan.original_tokens * policy.target_ratio))
                return await self._apply(
                    project, info, plan, self._fallback(plan, target, notes), "fallback"
                )
            # The request went out with the answer that made it: repeating its transcript in
            # every later answer would bloat them all until the client answers.
            left = policy.client_summary_grace - waited
            ids = pending.entry_ids
            return CompressionResult(
                status="summary_pending",
                reason=f"a summary of entries #{ids[0]}-#{ids[-1]} ({len(ids)}) is still due: "
                "submit it with submit_session_summary (read the request again with "
                f"read_summary_request); after {left + 1} more entries the server writes a "
                "fallback summary itself",
            )
        # A new request, or (asked for with compress_session) the pending one renewed.
        pending = PendingSummary(
            entry_ids=tuple(e.id for e in plan.entries), requested_at_entry=info.last_entry
        )
        await self._store.set_pending(project, info.session_id, pending)
        asked = list(plan.entries)
        return CompressionResult(
            status="summary_requested",
            reason=plan.reason,
            request=self._request(asked, policy, notes),
        )

    def _request(
        self, asked: Sequence[Entry], policy: ConversationPolicy, notes: list[str]
    ) -> SummaryRequest:
        tokens = sum(e.token_count for e in asked)
        target = max(16, math.ceil(tokens * policy.target_ratio))
        transcript, cut = condensed_transcript(
            asked,
            entry_bytes=policy.summary_request_entry_bytes,
            total_bytes=policy.summary_request_bytes,
        )
        pages = len(transcript_pages(asked, policy.summary_request_bytes))
        instructions = summarization_prompt(target)
        if cut:
            instructions += (
                f" The transcript below is condensed: entries {_id_list(cut)} are cut or left "
                f"out. Read the whole transcript with read_summary_request (pages 1-{pages}) "
                "before you summarise them."
            )
        return SummaryRequest(
            entry_ids=tuple(e.id for e in asked),
            instructions=instructions,
            transcript=transcript + notes_transcript(notes),
            target_tokens=target,
            cut_entry_ids=cut,
            pages=pages,
        )

    async def read_request(self, project: str, session_id: str, page: int = 1) -> RequestPage:
        """One page of the whole transcript of the summary the client was asked to write.

        Raises:
            ConflictError: No summary is pending for this session.
            InvalidInputError: `page` is not between 1 and the number of pages.
        """
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        if info.pending is None:
            raise ConflictError(
                "no summary is pending for this session; call compress_session to ask for one"
            )
        policy = self._effective(info)
        wanted = set(info.pending.entry_ids)
        asked = [
            e for e in await self._store.entries(project, sid, active_only=True) if e.id in wanted
        ]
        pages = transcript_pages(asked, policy.summary_request_bytes)
        if not 1 <= page <= len(pages):
            raise InvalidInputError("page", f"must be between 1 and {len(pages)}")
        return RequestPage(
            entry_ids=tuple(e.id for e in asked),
            page=page,
            pages=len(pages),
            transcript=pages[page - 1],
        )

    def _fallback(self, plan: CompressionPlan, target_tokens: int, notes: list[str]) -> str:
        budget = max(200, target_tokens * 4)
        return notes_digest(fallback_summary(plan.entries, max_bytes=budget), notes, budget)

    async def _notes(self, session_id: str) -> list[str]:
        """The session's scratchpad snippets, which its summaries are written from too."""
        return await self._session_notes(session_id) if self._session_notes else []

    async def _apply(
        self,
        project: str,
        info: SessionInfo,
        plan: CompressionPlan,
        text: str,
        source: SummarySource,
    ) -> CompressionResult:
        entries = plan.entries
        draft = SummaryDraft(
            text=text,
            entry_ids=tuple(e.id for e in entries),
            token_count=count_tokens(text),
            original_tokens=plan.original_tokens,
            covers_from=entries[0].timestamp,
            covers_until=entries[-1].timestamp,
            source=source,
        )
        summary = await self._store.apply_summary(
            project, info.session_id, draft, self._clock.now()
        )
        if summary is None:
            raise ConflictError("those entries were summarised meanwhile")
        saved = draft.original_tokens - draft.token_count
        log.info(
            "conversation.compressed",
            project=project,
            session_id=info.session_id,
            summary=summary.id,
            source=source,
            entries=len(entries),
            original_tokens=draft.original_tokens,
            summary_tokens=draft.token_count,
            tokens_saved=saved,
            reason=plan.reason,
        )
        return CompressionResult(
            status="compressed", reason=plan.reason, summary=summary, tokens_saved=saved
        )

    async def submit_summary(self, project: str, session_id: str, text: str) -> CompressionResult:
        """Store the summary the client's model wrote for the pending request."""
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        if info.pending is None:
            raise ConflictError(
                "no summary was requested for this session",
                next_step="Call compress_session first; submit the summary it asks for.",
            )
        policy = self._effective(info)
        body = check_text("summary", text, max_chars=policy.max_entry_chars)
        body = redact_text(body, self._redaction)[0]
        wanted = set(info.pending.entry_ids)
        active = [
            e for e in await self._store.entries(project, sid, active_only=True) if e.id in wanted
        ]
        if len(active) != len(wanted):
            await self._store.set_pending(project, sid, None)
            raise ConflictError(
                "the requested entries were summarised meanwhile (by the fallback)",
                next_step="Call compress_session again if more remain.",
            )
        plan = CompressionPlan(entries=tuple(active), reason="client summary")
        return await self._apply(project, info, plan, body, "client")

    # --- Q&A cycles -------------------------------------------------------------------------

    async def finalize_exchange(
        self, project: str, session_id: str, question: str, answer: str
    ) -> FinalizedExchange:
        """Store a question and its answer; fold old exchanges; age the tool-result cache."""
        project, sid = check_project(project), _session_id(session_id)
        info = await self._store.get_session(project, sid)
        policy = self._effective(info)
        report = Redaction()
        q = check_text("question", question, max_chars=policy.max_entry_chars)
        a = check_text("answer", answer, max_chars=policy.max_entry_chars)
        q = redact_text(q, self._redaction, report)[0]
        a = redact_text(a, self._redaction, report)[0]
        short = (
            await self._shorten_answer(q, a, policy)
            if (len(a.encode("utf-8")) > policy.answer_shorten_over)
            else a
        )

        def fold(summary: str, leaving: Sequence[Exchange]) -> str:
            lines = [summary] if summary else []
            lines.extend(fold_line(x) for x in leaving)
            return "\n".join(lines)

        outcome = await self._store.finalize_exchange(
            project,
            sid,
            (q, short, short != a),
            self._clock.now(),
            policy.max_active_exchanges,
            fold,
        )
        compressed = False
        if len(outcome.qa_summary.encode("utf-8")) > policy.qa_summary_over:
            new = await self._shrink_qa(outcome.qa_summary, policy)
            try:
                compressed = await self._store.replace_qa_summary(
                    project, sid, outcome.qa_summary, new
                )
            except StorageError:
                # The exchange is committed; the next one compresses the summary again.
                log.warning("conversation.qa_compress_deferred", project=project, session_id=sid)
            if compressed:
                log.info(
                    "conversation.qa_summary_compressed",
                    project=project,
                    session_id=sid,
                    bytes_before=len(outcome.qa_summary.encode()),
                    bytes_after=len(new.encode()),
                )
                outcome = outcome.model_copy(update={"qa_summary": new})
        for item in outcome.expired:
            log.info(
                "conversation.cache_expired", project=project, session_id=sid, tool=item.tool_name
            )
        cache = await self._store.cache_list(project, sid)
        return FinalizedExchange(
            outcome=outcome,
            qa_summary_compressed=compressed,
            cache=cache,
            redacted=report.as_dict(),
        )

    async def _shorten_answer(self, question: str, answer: str, policy: ConversationPolicy) -> str:
        """A long answer as stored: the summarizer's digest when there is one, else its start.

        Trigger: an answer over `answer_shorten_over` bytes. Why: cutting it keeps only its
        first sentences, while a summarizer keeps its gist. Outcome: the summarizer writes
        it (bounded by `answer_shorten_to` whatever it returns); without one, or if it fails,
        the answer is cut at a sentence end.
        """
        if self._summarizer is not None:
            try:
                digest = await self._summarizer.summarize(
                    f"Shorten this answer to at most {policy.answer_shorten_to} bytes, keeping "
                    "what it concludes, names, numbers and identifiers exactly. The question "
                    f"was: {shorten_bytes(question, 500)}",
                    answer,
                    max(16, policy.answer_shorten_to // CHARS_PER_TOKEN),
                )
                return shorten_bytes(" ".join(digest.split()), policy.answer_shorten_to)
            except SummarizerError as exc:
                log.warning("conversation.summarizer_failed", reason=exc.reason)
        return shorten_bytes(answer, policy.answer_shorten_to)

    async def _shrink_qa(self, text: str, policy: ConversationPolicy) -> str:
        if self._summarizer is not None:
            try:
                shorter = await self._summarizer.summarize(
                    "Compress these notes of earlier questions and answers to at most "
                    f"{policy.qa_summary_to} bytes. Keep one line per topic, names and numbers "
                    "exactly.",
                    text,
                    max(16, policy.qa_summary_to // CHARS_PER_TOKEN),
                )
                # Whatever the model wrote, the bound holds.
                return compress_qa_summary(shorter, policy.qa_summary_to)
            except SummarizerError as exc:
                log.warning("conversation.summarizer_failed", reason=exc.reason)
        return compress_qa_summary(text, policy.qa_summary_to)

    # --- tool-result cache ------------------------------------------------------------------

    async def cache_put(
        self,
        project: str,
        session_id: str,
        tool_name: str,
        parameters: JsonValue,
        result: JsonValue,
        duration: int,
    ) -> CachedResult:
        """Cache a tool result for `duration` exchanges (reset by every lookup that hits)."""
        project, sid = check_project(project), _session_id(session_id)
        name = check_text("tool_name", tool_name, max_chars=MAX_TOOL_NAME)
        if not 1 <= duration <= _MAX_CACHE_DURATION:
            raise InvalidInputError(
                "duration", f"must be a whole number of exchanges from 1 to {_MAX_CACHE_DURATION}"
            )
        parameters = _parameters(parameters)
        check_json_size("parameters", parameters)
        check_json_size("result", result)
        # Redaction is deterministic, so a lookup with the same secret finds the same key.
        parameters = redact_json(parameters, self._redaction)[0]
        result = redact_json(result, self._redaction)[0]
        item = CachedResult(
            key=cache_key(name, parameters),
            tool_name=name,
            parameters=parameters,
            result=result,
            duration=duration,
            remaining=duration,
            created_at=self._clock.now(),
        )
        await self._store.cache_put(project, sid, item)
        return item

    async def cache_lookup(
        self, project: str, session_id: str, tool_name: str, parameters: JsonValue
    ) -> CachedResult | None:
        """A cached result for exactly this tool and these parameters, or None."""
        project, sid = check_project(project), _session_id(session_id)
        name = check_text("tool_name", tool_name, max_chars=MAX_TOOL_NAME)
        key = cache_key(name, redact_json(_parameters(parameters), self._redaction)[0])
        return await self._store.cache_get(project, sid, key)

    # --- export / import --------------------------------------------------------------------

    async def export(self, project: str, session_id: str) -> SessionExport:
        """The whole session as plain data."""
        return await self._store.export_session(check_project(project), _session_id(session_id))

    async def import_(
        self, project: str, data: JsonValue, session_id: str | None = None
    ) -> ImportedSession:
        """Create a session from an export, under its own id or `session_id`.

        Every text passes the limits `add_session_entry` applies (no NUL, entries at most
        `max_entry_chars` of the session's settings) and the redaction gate; a bad field is
        named with its entry's position and nothing is written (services.session_imports).
        """
        project = check_project(project)
        parsed = read_session_export(data, session_id, self._policy)
        report = Redaction()
        parsed = redacted_session(parsed, self._redaction, report)
        await self._store.import_session(project, parsed)
        log.info(
            "conversation.session_imported",
            project=project,
            session_id=parsed.session_id,
            entries=len(parsed.entries),
        )
        return ImportedSession(session=parsed, redacted=report.as_dict())


def _id_list(ids: Sequence[int], shown: int = 12) -> str:
    listed = ", ".join(f"#{i}" for i in ids[:shown])
    return listed + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _session_id(value: str) -> str:
    checked = check_session(value)
    assert checked is not None
    return checked


def _check_applicable(
    type: EntryType,
    tool_name: str | None,
    arguments: dict[str, JsonValue] | None,
    source: str | None,
    is_error: bool,
) -> None:
    """Each optional field belongs to some entry types only."""
    if arguments is not None and type is not EntryType.TOOL_CALL:
        raise InvalidInputError("arguments", "is only for type 'tool_call'")
    if tool_name is not None and type not in (EntryType.TOOL_CALL, EntryType.TOOL_RESULT):
        raise InvalidInputError("tool_name", "is only for types 'tool_call' and 'tool_result'")
    if source is not None and type is not EntryType.CONTEXT:
        raise InvalidInputError("source", "is only for type 'context'")
    if is_error and type is not EntryType.TOOL_RESULT:
        raise InvalidInputError("is_error", "is only for type 'tool_result'")


def _parameters(value: JsonValue) -> dict[str, JsonValue]:
    """Tool parameters: a JSON object, or text holding one (as some clients pass them)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInputError(
                "parameters", "must be a JSON object, or text that parses as one"
            ) from None
    if not isinstance(value, dict):
        raise InvalidInputError("parameters", "must be a JSON object of the tool's arguments")
    return value
