"""Recording a Claude Code transcript: what was said as memories, the rest as conversation.

Each recording reads the transcript's new lines (domain.transcript) and does four things:

1. **What was said becomes memory.** The person's prompts and the model's final answers
   (domain.turns) are stored as episodic memories of the project, authored by role ("user",
   "assistant", or the names the hook settings give each role), dated at their turn
   (`occurred_at`), with metadata kind "said", through `MemoryService.append_many`: redacted
   like every write, and an identical text in the project is the same memory, so a transcript
   read again adds nothing twice. They are written
   without vectors here (a hook cannot load the model in time); the server that holds the
   model embeds them (its backfill), so they are found by meaning as well as by words.
2. **The conversation.** Every entry (messages, tool calls, tool results, compaction
   summaries) goes to conversation memory, as before: redacted, counted, compressed. The
   cursor in the hook session state moves after every line, with the file's byte offset
   there (the next capture reads from it, server.hooks.transcript_file) and the number of
   the last entry written (its mark), so a transcript read again, or grown since, adds only
   what is new. A run cut short between an entry and the cursor that follows it (a kill)
   left that entry after the mark: the next run finds it there and does not write it again.
3. **Use.** A memory the hooks showed this session counts as used when the new lines show the
   model acting on it (domain.usage); its access is recorded at the time of that use.
4. **A digest, for sessions with substance** (domain.turns.has_substance): one episodic
   memory (metadata kind "session_summary") built from the session's own prompts, tools and
   last answer; recording the session again replaces it. Search ranks digests below what was
   said (RankingPolicy.digest_weight), and the prompt hook never injects them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import structlog
from pydantic import JsonValue

from memory_core.domain.boilerplate import is_acknowledgement
from memory_core.domain.capture_place import CapturePlace, TranscriptText
from memory_core.domain.conversation import Entry, EntryType, Role
from memory_core.domain.hook_session import (
    PROMPT_SOURCE,
    SESSION_SUMMARY_KIND,
    START_SOURCE,
    TranscriptCursor,
)
from memory_core.domain.models import BrowseQuery, Layer, Memory
from memory_core.domain.transcript import TranscriptEntry, TranscriptRead, read_transcript
from memory_core.domain.turns import SAID_KIND, has_substance, said_items, session_digest
from memory_core.domain.usage import uses
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.ports import Clock
from memory_core.ports.hooks import HookSessionStore
from memory_core.services.conversations import ConversationService, NewEntry
from memory_core.services.memories import (
    APPEND_BATCH_MAX,
    AppendItem,
    AppendResult,
    MemoryService,
)

__all__ = [
    "COMPACTION_SOURCE",
    "PROMPT_SOURCE",
    "START_SOURCE",
    "RecordResult",
    "TranscriptRecorder",
    "TranscriptSource",
    "session_summary",
]

log = structlog.get_logger(__name__)

# `source` of context entries: a Claude Code compaction summary (what the hooks injected is
# START_SOURCE and PROMPT_SOURCE, domain.hook_session).
COMPACTION_SOURCE = "claude-code:compaction"
# How a capture reads the transcript from where it stands (server.hooks.transcript_file).
TranscriptSource = Callable[[CapturePlace], Awaitable[TranscriptText]]
# Pages of the session's newest episodic rows searched for its digests (domain limit each).
_DIGEST_PAGES = 3
# Conversation entries written per transaction, in whole lines (`_store_entries`): a kill
# or the hook's budget loses at most one batch's work, which the next capture does again.
_ENTRY_BATCH = 256
# Said turns stored per append_many call: about 0.15 s each on a busy machine, so a
# recording asked to stop (`stop`) stops soon after.
_SAID_BATCH = min(128, APPEND_BATCH_MAX)
# The earliest turn time kept (as for any client's occurred_at).
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RecordResult:
    """What one recording added."""

    entries_added: int
    entries_skipped: int
    malformed_lines: int
    cursor: TranscriptCursor
    summary_id: int | None
    said_added: int = 0
    used: int = 0
    # False: the recording stopped early when asked (`stop`); the next one goes on from its place.
    complete: bool = True


def _new_entry(entry: TranscriptEntry) -> NewEntry:
    """The conversation entry a transcript entry is recorded as."""
    if entry.kind in ("user", "assistant"):
        role = Role.USER if entry.kind == "user" else Role.ASSISTANT
        return NewEntry(type=EntryType.MESSAGE, role=role, content=entry.text)
    if entry.kind == "tool_call":
        return NewEntry(
            type=EntryType.TOOL_CALL, tool_name=entry.tool_name, arguments=entry.arguments or {}
        )
    if entry.kind == "tool_result":
        return NewEntry(
            type=EntryType.TOOL_RESULT,
            content=entry.text,
            tool_name=entry.tool_name,
            is_error=entry.is_error,
        )
    return NewEntry(type=EntryType.CONTEXT, content=entry.text, source=COMPACTION_SOURCE)


def session_summary(
    title: str | None, entries: Sequence[Entry], started: datetime | None
) -> str | None:
    """The digest of a recorded session, or None when it has no substance (domain.turns)."""
    spoken = [
        e
        for e in entries
        if not (e.type is EntryType.CONTEXT and e.source in (START_SOURCE, PROMPT_SOURCE))
    ]
    prompts = [
        e.content
        for e in spoken
        if e.type is EntryType.MESSAGE and e.role is Role.USER and not is_acknowledgement(e.content)
    ]
    tools = [e.tool_name or "" for e in spoken if e.type is EntryType.TOOL_CALL]
    if not has_substance(len(prompts), len(tools)):
        return None
    answers = [
        e.content for e in spoken if e.type is EntryType.MESSAGE and e.role is Role.ASSISTANT
    ]
    return session_digest(
        title=title, started=started, prompts=prompts, answers=answers, tools=tools
    )


class TranscriptRecorder:
    """Records transcripts of one store's sessions (see the module docstring)."""

    def __init__(
        self,
        *,
        conversations: ConversationService,
        memories: MemoryService,
        hook_sessions: HookSessionStore,
        clock: Clock,
        authors: Mapping[str, str] | None = None,
    ) -> None:
        """`authors`: who captured turns are authored by, per role (default: the role)."""
        self._conversations = conversations
        self._memories = memories
        self._hooks = hook_sessions
        self._clock = clock
        self._authors = dict(authors or {})

    async def record(
        self,
        project: str,
        session_id: str,
        lines: Sequence[str] | TranscriptSource,
        *,
        summarize: bool = True,
        stop: Callable[[], bool] | None = None,
    ) -> RecordResult:
        """Record the transcript's new lines (see the module docstring).

        `lines`: the whole transcript, or how to read it from where the capture stands (a
        bounded read of the file from the place's byte offset, server.hooks.transcript_file).
        `summarize` stores or replaces the session's digest when the session has substance.
        `stop` is asked after each batch written (of said turns, of entries) whether to stop
        there (a hook near its budget): the place then stands after the last batch, the digest
        is left for the recording that finishes (`complete` is False), and a recording started
        afterwards goes on from there, writing nothing twice.

        A run cut short anywhere (a kill, the hook's budget) loses and repeats nothing:
        what was said is stored first, and the same texts are the same memories; each line's
        entries are followed by the cursor, and the entries a cut-short run wrote after the
        last cursor are found by the cursor's entry mark (`_written_after`) and not written
        again; the digest is replaced by the one built from every entry.
        """
        state = await self._hooks.get(project, session_id)
        place = await self._hooks.get_place(project, session_id)
        text = await lines(place) if callable(lines) else TranscriptText.whole(lines)
        read = read_transcript(text.lines, place.cursor, first_line=text.first_line)
        said, said_done = await self._store_said(project, session_id, read.entries, stop)
        if not said_done:
            # The same texts are the same memories: the next recording stores the rest.
            return RecordResult(
                entries_added=0,
                entries_skipped=0,
                malformed_lines=read.malformed_lines,
                cursor=place.cursor,
                summary_id=place.summary_id,
                said_added=said,
                complete=False,
            )
        info, _ = await self._conversations.start(project, session_id)
        # First capture of the session (or since the mark exists): nothing this capture writes
        # is in the session yet, so its entries come after the last one there. The title is
        # kept before the cursor passes its line, so a cut-short run cannot lose it.
        begun = replace(
            place,
            entry_mark=info.last_entry if place.entry_mark is None else place.entry_mark,
            title=read.titles[-1] if read.titles else place.title,
        )
        if begun != place:
            await self._hooks.save_place(project, session_id, begun, self._clock.now())
        place, added, skipped, consumed = await self._store_entries(
            project, session_id, read, text, begun, info.last_entry, stop
        )
        complete = consumed == len(read.entries)
        # Only the entries this recording moved past: the next one reads from the place.
        used = await self._record_use(
            project, state.injected if state else (), read.entries[:consumed]
        )
        if summarize and complete:
            summary_id = await self._store_summary(
                project,
                session_id,
                place.title,
                place.summary_id,
                lambda: _first_time(read_transcript(text.head()).entries),
            )
            place = replace(place, summary_id=summary_id)
            await self._hooks.save_place(project, session_id, place, self._clock.now())
        return RecordResult(
            entries_added=added,
            entries_skipped=skipped,
            malformed_lines=read.malformed_lines,
            cursor=place.cursor,
            summary_id=place.summary_id,
            said_added=said,
            used=used,
            complete=complete,
        )

    async def _store_entries(
        self,
        project: str,
        session_id: str,
        read: TranscriptRead,
        text: TranscriptText,
        place: CapturePlace,
        last_entry: int,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[CapturePlace, int, int, int]:
        """Store the read's entries in batches of whole lines, moving the place after each.

        A batch is one transaction (ConversationService.add_entries), then the place after its
        last line; a run cut short between the two left that batch after the mark, at the
        start of what follows the cursor, where `_written_after` finds it and it is not
        written again. Returns the place at the end (the read's cursor, or the last batch's
        when `stop` said so after it), how many entries are in the session, how many were
        skipped, and how many of the read's entries it went through.
        """
        mark = place.entry_mark or 0
        written = await self._written_after(project, session_id, mark, last_entry)
        added = skipped = 0
        batch: list[TranscriptEntry] = []
        for index, entry in enumerate(read.entries):
            # A boundary is a marker of Claude Code's, not an entry.
            if entry.kind != "boundary":
                if written and _same(written[0], entry):
                    mark = written.pop(0).id  # a cut-short run stored it already
                    added += 1
                else:
                    written = []  # past what a cut-short run wrote: the rest is new
                    batch.append(entry)
            last_of_line = (
                index + 1 == len(read.entries) or read.entries[index + 1].after != entry.after
            )
            if last_of_line and entry.after is not None and len(batch) >= _ENTRY_BATCH:
                mark, stored, refused = await self._add_entries(project, session_id, batch, mark)
                added, skipped, batch = added + stored, skipped + refused, []
                place = replace(
                    place,
                    cursor=entry.after,
                    offset=text.offset_after(entry.after.lines),
                    entry_mark=mark,
                )
                await self._hooks.save_place(project, session_id, place, self._clock.now())
                if stop is not None and index + 1 < len(read.entries) and stop():
                    return place, added, skipped, index + 1
        mark, stored, refused = await self._add_entries(project, session_id, batch, mark)
        added, skipped = added + stored, skipped + refused
        place = replace(
            place, cursor=read.cursor, offset=text.offset_after(read.cursor.lines), entry_mark=mark
        )
        await self._hooks.save_place(project, session_id, place, self._clock.now())
        return place, added, skipped, len(read.entries)

    async def _add_entries(
        self, project: str, session_id: str, batch: Sequence[TranscriptEntry], mark: int
    ) -> tuple[int, int, int]:
        """Store a batch in one transaction: the new mark, how many were stored and skipped."""
        if not batch:
            return mark, 0, 0
        done = await self._conversations.add_entries(
            project, session_id, [_new_entry(e) for e in batch]
        )
        stored = [r for r in done if not isinstance(r, InvalidInputError)]
        for result in done:
            if isinstance(result, InvalidInputError):
                # A block this store cannot hold (e.g. a tool name over 128 characters): skip
                # it, keep the rest of the session.
                log.warning("hooks.entry_skipped", session_id=session_id, field=result.field)
        return (stored[-1].id if stored else mark), len(stored), len(done) - len(stored)

    async def _written_after(
        self, project: str, session_id: str, mark: int, last: int
    ) -> list[Entry]:
        """The entries a capture wrote after entry `mark`, oldest first.

        Only a capture cut short between an entry and its cursor leaves any: they are the
        first entries of the line after the cursor. What the hooks injected meanwhile (their
        context entries) is left out: it is not the transcript's.
        """
        if last <= mark:
            return []  # the usual case: nothing after the mark, no read
        data = await self._conversations.export(project, session_id)
        return [
            e
            for e in data.entries
            if e.id > mark and (e.type is not EntryType.CONTEXT or e.source == COMPACTION_SOURCE)
        ]

    def _turn_time(self, at: datetime | None) -> datetime | None:
        """A turn's time as `occurred_at` accepts it; None (now) when it is out of range."""
        if at is None or not _EARLIEST <= at <= self._clock.now() + timedelta(hours=23):
            return None
        return at

    async def _store_said(
        self,
        project: str,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        stop: Callable[[], bool] | None = None,
    ) -> tuple[int, bool]:
        """Store the prompts and final answers of `entries`.

        Returns how many rows are new, and False when `stop` said to stop before the last batch.
        """
        items = [
            AppendItem(
                layer=Layer.EPISODIC,
                content=item.text,
                metadata={"kind": SAID_KIND, "role": item.role, "source": "claude-code"}
                | ({"part": f"{item.part}/{item.parts}"} if item.parts > 1 else {})
                | ({"reply_to": item.reply_to} if item.reply_to else {}),
                session_id=session_id,
                author=self._authors.get(item.role) or item.role,
                occurred_at=self._turn_time(item.at),
            )
            for item in said_items(entries)
        ]
        created = 0
        for start in range(0, len(items), _SAID_BATCH):
            batch = items[start : start + _SAID_BATCH]
            try:
                results = await self._memories.append_many(project, batch)
            except InvalidInputError:
                # One turn this store refuses (the batch is all or nothing) must not stop
                # the rest, nor every later recording of the session: store them one by one.
                results = await self._one_by_one(project, session_id, batch)
            created += sum(1 for r in results if r.status == "created")
            if stop is not None and start + _SAID_BATCH < len(items) and stop():
                return created, False
        return created, True

    async def _one_by_one(
        self, project: str, session_id: str, items: Sequence[AppendItem]
    ) -> list[AppendResult]:
        results = []
        for item in items:
            try:
                results += await self._memories.append_many(project, [item])
            except InvalidInputError as exc:
                log.warning("hooks.turn_skipped", session_id=session_id, field=exc.field)
        return results

    async def _record_use(
        self, project: str, shown: Sequence[int], entries: Sequence[TranscriptEntry]
    ) -> int:
        """Record an access on each shown memory the new entries use, at the time of use."""
        if not shown or not entries:
            return 0
        repo = self._memories.repo
        memories = [m for i in dict.fromkeys(shown) if (m := await repo.get(project, i))]
        found = uses(memories, entries, self._clock.now())
        by_time: dict[datetime, list[int]] = {}
        for memory_id, at in found.items():
            # Never later than now, never before the memory's own last access.
            by_time.setdefault(min(at, self._clock.now()), []).append(memory_id)
        for at, ids in sorted(by_time.items()):
            await repo.hand_out(project, ids, at)
        if found:
            log.info("hooks.memories_used", count=len(found))
        return len(found)

    async def _session_digests(self, project: str, session_id: str) -> list[Memory]:
        """The session's digests, newest first, from its newest episodic rows.

        Normally one (the `summary_id` of the state); two when a run was cut short between
        writing a new digest and recording it. A digest is written after the said turns of
        its capture, so it is among the newest rows of the session.
        """
        found: list[Memory] = []
        before: int | None = None
        for _ in range(_DIGEST_PAGES):
            page = await self._memories.browse(
                BrowseQuery(
                    project=project,
                    layer=Layer.EPISODIC,
                    session_id=session_id,
                    limit=self._memories.limits.max_limit,
                    before_id=before,
                )
            )
            found += [m for m in page if m.metadata.get("kind") == SESSION_SUMMARY_KIND]
            if len(page) < self._memories.limits.max_limit:
                break
            before = page[-1].id
        return found

    async def _store_summary(
        self,
        project: str,
        session_id: str,
        title: str | None,
        previous: int | None,
        first_time: Callable[[], datetime | None],
    ) -> int | None:
        data = await self._conversations.export(project, session_id)
        if not data.entries:
            return previous
        digests = await self._session_digests(project, session_id)
        old = next((m for m in digests if m.id == previous), digests[0] if digests else None)
        if title is None and old is not None:
            title_value = old.metadata.get("title")
            title = title_value if isinstance(title_value, str) else None
        # Dated by the session's first turn, whichever capture writes the first digest.
        started = old.occurred_at if old is not None else self._turn_time(first_time())
        text = session_summary(title, data.entries, started)
        new_id: int | None = None
        if text is not None and old is not None and old.content == text:
            new_id = old.id  # nothing new since: the same digest
        elif text is not None:
            metadata: dict[str, JsonValue] = {
                "kind": SESSION_SUMMARY_KIND,
                "session_id": session_id,
            }
            if title:
                metadata["title"] = title
            result = await self._memories.append(
                project,
                Layer.EPISODIC,
                text,
                metadata=metadata,
                session_id=session_id,
                occurred_at=started,
            )
            new_id = result.memory.id
        # The one replaced, and one a cut-short run wrote but never recorded.
        stale = {m.id for m in digests} | ({previous} if previous is not None else set())
        for memory_id in sorted(stale - {new_id}):
            # Already forgotten by someone: nothing left to replace.
            with contextlib.suppress(MemoryNotFoundError):
                await self._memories.forget(project, memory_id)
        return new_id


def _same(stored: Entry, entry: TranscriptEntry) -> bool:
    """Whether `stored` is what recording `entry` writes (its kind, role and tool)."""
    wanted = _new_entry(entry)
    tools = wanted.type in (EntryType.TOOL_CALL, EntryType.TOOL_RESULT)
    return (
        stored.type is wanted.type
        and stored.role is (wanted.role or stored.role)
        and (stored.tool_name == wanted.tool_name or not tools)
    )


def _first_time(entries: Sequence[TranscriptEntry]) -> datetime | None:
    return next((e.at for e in entries if e.at is not None), None)
