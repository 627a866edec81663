"""Writing, finding and removing memories: the use cases behind the client-facing tools."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

import structlog
from pydantic import ConfigDict, Field, JsonValue

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.domain.budget import TokenAllowance
from memory_core.domain.compaction import chunk_entries, summarize_entries
from memory_core.domain.corrections import LOOSE_SIMILARITY, corrects, replaces_value
from memory_core.domain.dates import dates_of, normalise_dates, query_time
from memory_core.domain.duplicates import DuplicateThresholds, anchors, fold_newest, newest_first
from memory_core.domain.frozen import Frozen as _Frozen
from memory_core.domain.fts_query import search_words, to_fts5_query
from memory_core.domain.hook_session import RECORDED_KINDS
from memory_core.domain.inputs import (
    check_author,
    check_ids,
    check_key,
    check_limit,
    check_metadata,
    check_project,
    check_session,
    check_text,
    check_time_range,
    check_token_budget,
    content_hash,
)
from memory_core.domain.match import Match
from memory_core.domain.models import (
    AddOutcome,
    BrowseQuery,
    Layer,
    Memory,
    MemoryDraft,
    SearchHit,
    SearchMode,
    TextMatch,
    TextQuery,
    Tier,
    VectorMatch,
)
from memory_core.domain.ranking import Candidate, fuse_phrasings, name_words, rank_candidates
from memory_core.domain.redaction import Redaction, RedactionPolicy, Redactor, redact_key
from memory_core.domain.rules import rule_applies
from memory_core.domain.tags import check_tags
from memory_core.domain.tiers import classify_tier, tier_cutoffs
from memory_core.domain.tokens import count_tokens
from memory_core.errors import (
    ConfirmationRequiredError,
    EmbeddingUnavailableError,
    InvalidInputError,
    InvalidQueryError,
    MemoryNotFoundError,
)
from memory_core.ports import Clock, KeywordSearch, MemoryRepository
from memory_core.services.access_recording import hand_out, hand_out_read
from memory_core.services.indexing import Indexer, NearDuplicate, embedding_text
from memory_core.services.resemblance import (
    NEIGHBOURS,
    Likeness,
    Resemblances,
    batch_twins,
    embed_texts,
    resemblances,
)

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector
    from memory_core.ports.memories import VectorIndex
    from memory_core.services.pressure import CapOnWrite

__all__ = [
    "APPEND_BATCH_MAX",
    "MAX_QUERIES",
    "AppendItem",
    "AppendResult",
    "CompactResult",
    "ContextItem",
    "ContextResult",
    "MemoryService",
    "RecallResult",
    "SearchRequest",
    "SearchResult",
]

log = structlog.get_logger(__name__)

# Keyword candidates fetched per requested hit, so that the tier and recency signals can lift a
# slightly weaker text match above a stronger one that has gone cold.
_CANDIDATES_PER_HIT = 4
_MIN_CANDIDATES = 50
_MAX_CANDIDATES = 400
_RULES_PER_RECALL = 5
# A batch of at least this many new texts is checked for stored look-alikes in one pass.
_BATCH_PROBE_MIN = 8
# The highest cosine two stored vectors can have: unit length, with float32 rounding and an
# imported vector's norm a little off 1 (vectors._NORM_SLACK) allowed for.
_MAX_COSINE = 1.01
_MAX_ID = 2**63
# Phrasings one search may fuse (`queries`).
MAX_QUERIES = 5
# Items one append_many call may hold: one transaction and one model call for all of them.
APPEND_BATCH_MAX = 1000


class AppendResult(_Frozen):
    """The outcome of an append, how many old working entries it trimmed, a near-duplicate."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    outcome: AddOutcome
    trimmed: int = 0
    near_duplicate: NearDuplicate | None = None
    # Stored memories this one closely resembles but differs from (the band just below a
    # duplicate, or a near copy differing in a number, date, name or negation): ones it
    # may supersede, for the client to confirm (`supersedes`). Nothing is superseded on a guess.
    candidates: list[Likeness] = Field(default_factory=list)
    redacted: dict[str, int] = Field(default_factory=dict)
    # The project held no memory before this write: a mistyped name creates a new project
    # silently, so the answer says so.
    new_project: bool = False

    @property
    def memory(self) -> Memory:
        """The stored (or existing) memory."""
        return self.outcome.memory

    @property
    def status(self) -> Literal["created", "updated", "unchanged", "duplicate"]:
        """created, updated, unchanged or duplicate."""
        return self.outcome.status

    @property
    def previous_content(self) -> str | None:
        """What an updated keyed memory said before."""
        return self.outcome.previous_content


class SearchResult(_Frozen):
    """Hits best first, the mode actually used, and anything the caller should know."""

    hits: list[SearchHit]
    mode: SearchMode
    omitted: int = 0
    notes: list[str] = Field(default_factory=list)
    # Candidates left out because they matched below the request's `min_match`.
    dropped: int = 0
    # Older versions of a hit's fact folded away behind it: {kept memory id: how many}.
    folded: dict[int, int] = Field(default_factory=dict)
    # With `SearchRequest.versions`: hits a newer hit close to them follows (a correction
    # written without `supersedes`): {older memory id: the newer one's id}.
    older: dict[int, int] = Field(default_factory=dict)


class ContextResult(_Frozen):
    """load_context's items and how many the token budget left out."""

    items: list[ContextItem]
    omitted: int = 0


class RecallResult(_Frozen):
    """A semantic value by key (or None), the procedural rules that apply, close keys."""

    key: str
    value: Memory | None
    rules: list[Memory]
    suggestions: list[str]


class ContextItem(_Frozen):
    """A memory handed out by load_context, with the tier it had before this access."""

    memory: Memory
    tier_before: Tier


class CompactResult(_Frozen):
    """What a compaction removed and the summaries that replaced it (one per 50 entries)."""

    removed: int
    kept: int
    summaries: list[Memory]


# The earliest `occurred_at` a client may give (as for imported times).
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


class AppendItem(_Frozen):
    """One memory of a batched append (`MemoryService.append_many`); fields as in `append`."""

    layer: Layer
    content: str
    key: str | None = None
    metadata: dict[str, JsonValue] | None = None
    session_id: str | None = None
    author: str | None = None
    occurred_at: datetime | None = None
    tags: tuple[str, ...] = ()
    supersedes: tuple[int, ...] = ()


class SearchRequest(_Frozen):
    """What a client asks `search` for: `query`, `queries` (up to 5 phrasings), or both."""

    project: str
    query: str | None = None
    queries: tuple[str, ...] = ()
    mode: SearchMode = SearchMode.HYBRID
    layer: Layer | None = None
    session_id: str | None = None
    author: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 10
    token_budget: int | None = None
    # False for a person looking (the dashboard): the hits are not marked as used, so looking
    # does not keep memories from ageing.
    mark_used: bool = True
    # Leave out hits whose absolute match strength is below this (domain.match).
    min_match: Match | None = None
    # Only memories holding every one of these tags.
    tags: tuple[str, ...] = ()
    # Superseded memories (history) too; hidden by default.
    include_superseded: bool = False
    # Say which hits a newer close hit follows (SearchResult.older): for the prompt hook, which
    # shows the current version of a fact only.
    versions: bool = False


def _followed(
    ids: Sequence[int],
    ages: Sequence[tuple[datetime, int]],
    alike: Callable[[int, int], float | None],
) -> dict[int, int]:
    """{older id: newer id} for each pair of hits close enough to be versions of one fact."""
    older: dict[int, int] = {}
    for b in range(1, len(ids)):
        for a in range(b):
            if alike(a, b) is not None:
                old, new = sorted((a, b), key=lambda k: ages[k])
                older.setdefault(ids[old], ids[new])
    return older


def _version_similarity(
    ranked: Sequence[SearchHit], vectors: Sequence[Vector | None]
) -> Callable[[int, int], float | None]:
    """The cosine of two hits that may be versions of one fact (None: they cannot be)."""

    def similarity(i: int, j: int) -> float | None:
        first, second = ranked[i].memory, ranked[j].memory
        # Versions of a fact are written at different times, outside one conversation: turns
        # of one session, or rows written at one instant (an import, a benchmark's frozen
        # clock), are never folded nor reordered.
        if (
            first.created_at == second.created_at
            or first.layer is not second.layer
            or (first.session_id is not None and first.session_id == second.session_id)
        ):
            return None
        a, b = vectors[i], vectors[j]
        if a is None or b is None:
            return None
        import numpy as np  # loaded with the vectors

        return float(np.dot(a, b))

    return similarity


def _versions(
    ranked: Sequence[SearchHit],
    ages: Sequence[tuple[datetime, int]],
    pair: tuple[int, int],
    close: float,
    band: float,
    query: str,
) -> bool:
    """Whether two hits `close` to each other may be versions of one fact.

    In the candidate `band` they are when the newer states a value the older does not; below
    it, only when the newer reads as a correction of the older for the question asked
    (domain.corrections: it replaces a value of what both say about the question's subject).
    """
    old, new = sorted(pair, key=lambda k: ages[k])
    newer, older = ranked[new].memory.content, ranked[old].memory.content
    if close >= band:
        return replaces_value(newer, older)
    return corrects(newer, older, close, query)


def _recorded(memory: Memory) -> bool:
    """A memory that records what a session said (domain.turns.RECORDED_KINDS)."""
    return memory.metadata.get("kind") in RECORDED_KINDS


@dataclass(frozen=True)
class MemoryService:
    """The memory use cases over one repository."""

    repo: MemoryRepository
    clock: Clock
    limits: Limits
    tiers: TierPolicy
    ranking: RankingPolicy
    indexer: Indexer | None = None
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)
    # The same rows through a second connection (SQLite; see server.backends): hybrid search
    # runs its keyword half there while the vector half runs on `repo`'s, in parallel.
    keyword_reader: KeywordSearch | None = None
    duplicates: DuplicateThresholds = field(default_factory=DuplicateThresholds)
    # The storage cap's check after a write (services.pressure.cap_on_write); None: no cap.
    cap: CapOnWrite | None = None
    # Stored vectors to fold versions with when there is no indexer (a hook's keyword search
    # loads no model, yet the rows' vectors are stored).
    stored_vectors: VectorIndex | None = None

    def _draft(
        self,
        project: str,
        layer: Layer,
        content: str,
        *,
        key: str | None,
        metadata: dict[str, JsonValue] | None,
        session_id: str | None,
        author: str | None = None,
        occurred_at: datetime | None = None,
    ) -> MemoryDraft:
        text = check_text("content", content, max_chars=self.limits.max_content_chars)
        occurred_at = self._check_occurred(occurred_at)
        return MemoryDraft(
            project=check_project(project),
            layer=layer,
            content=text,
            key=key,
            metadata=check_metadata(metadata, self.limits),
            session_id=check_session(session_id),
            author=check_author(author),
            content_hash=content_hash(text),
            token_count=count_tokens(text),
            occurred_at=occurred_at,
            # Resolved here, on every write path that builds a draft: relative dates count
            # from the memory's own time, which is now unless the client said when it happened.
            dates=dates_of(text, occurred_at or self.clock.now()),
        )

    def _check_occurred(self, occurred_at: datetime | None) -> datetime | None:
        """A client's `occurred_at`, in UTC: between 1970 and now (plus a day of clock skew)."""
        if occurred_at is None:
            return None
        moment = check_time_range(occurred_at, None)[0]
        assert moment is not None
        if not _EARLIEST <= moment <= self.clock.now() + timedelta(days=1):
            raise InvalidInputError("occurred_at", "must lie between 1970 and now")
        return moment

    async def append(
        self,
        project: str,
        layer: Layer,
        content: str,
        *,
        key: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
        session_id: str | None = None,
        author: str | None = None,
        occurred_at: datetime | None = None,
        tags: Sequence[str] | None = None,
        supersedes: Sequence[int] | None = None,
    ) -> AppendResult:
        """Store a memory in a layer.

        working and episodic rows are unkeyed: identical content in the same project and layer
        returns the existing row. semantic rows upsert by `key` (or `metadata["key"]`);
        procedural rows are condition -> action rules with `key` the condition. The working
        layer keeps only the newest `limits.working_cap` entries per project+session.

        Credentials in content, key and metadata strings are replaced by `[REDACTED:<kind>]`
        first (see domain.redaction); the result counts them by kind. `author` names who said
        or wrote it (search filters on it, and lifts memories whose author the query names).
        `occurred_at` is when it happened or was said, if not now (a past conversation's
        session date): relative dates in the text ("yesterday") count from it.

        One truth per fact: an unkeyed text that normalises like a stored one of the same
        project, layer (and session, for working) is that memory (`duplicate`); so is a near
        duplicate by meaning and words whose numbers, dates, names and negation agree
        (domain.duplicates). Either way no row is added and the stored one is restated. A close
        memory that differs is named in `candidates`. `supersedes` marks older memories of the
        project as replaced by this one (hidden from search and listings from then on);
        `tags` label it.

        Raises:
            InvalidInputError: A field is missing, empty, too long or malformed.
        """
        draft, redaction = self._prepare(
            project,
            layer,
            content,
            key=key,
            metadata=metadata,
            session_id=session_id,
            author=author,
            occurred_at=occurred_at,
            tags=tags,
            supersedes=supersedes,
        )
        new_project = not await self.repo.has_project(draft.project)
        now = self.clock.now()
        found = await self._resemblances([draft])
        seen = found[0]
        near: NearDuplicate | None = None
        if seen.duplicate is not None:
            twin = seen.duplicate
            restated = await self.repo.restate(draft.project, twin.memory.id, draft, now)
            near = NearDuplicate(
                id=twin.memory.id, similarity=round(twin.resemblance.similarity, 4)
            )
            outcome = AddOutcome(memory=restated or twin.memory, status="duplicate")
        else:
            outcome = await self.repo.add(draft, now)
        if self.indexer is not None and outcome.status in ("created", "updated"):
            if seen.vector is not None and outcome.memory.key is None:
                await self._store_vectors([(outcome.memory, seen.vector)])
            else:
                near = await self._index_committed(outcome.memory)
        trimmed = 0
        if layer is Layer.WORKING and outcome.status == "created":
            trimmed = await self.repo.trim_session(
                draft.project, layer, draft.session_id, keep=self.limits.working_cap
            )
        await self._mind_cap(draft.project, [outcome])
        log.info(
            "memory.stored",
            memory_id=outcome.memory.id,
            layer=layer.value,
            status=outcome.status,
            trimmed=trimmed,
            redacted=redaction.as_dict(),
        )
        return AppendResult(
            outcome=outcome,
            trimmed=trimmed,
            near_duplicate=near,
            candidates=[c for c in seen.candidates if c.memory.id != outcome.memory.id],
            redacted=redaction.as_dict(),
            new_project=new_project,
        )

    async def _resemblances(self, drafts: Sequence[MemoryDraft]) -> list[Resemblances]:
        """What each unkeyed draft resembles among stored memories (one model call for all).

        Trigger: no model, or it is not ready within `model_wait`, or the embedding fails.
        Why: a write must not wait long nor fail for a duplicate check. Outcome: no near
        duplicate is looked for (normalised duplicates are still found by the store).
        """
        found = [Resemblances() for _ in drafts]
        wanted = [i for i, d in enumerate(drafts) if d.key is None]
        if self.indexer is None or not wanted:
            return found
        try:
            vectors = await embed_texts(self.indexer, [drafts[i].content for i in wanted])
            if vectors is None:
                return found
            far = await self._far_from_stored(drafts, wanted, vectors)
            for i, vector in zip(wanted, vectors, strict=True):
                if i in far:
                    found[i] = Resemblances(vector=vector)  # what `resemblances` would find
                    continue
                found[i] = await resemblances(
                    self.repo, self.indexer, drafts[i], vector, self.duplicates
                )
        except Exception:
            log.exception("duplicates.check_failed", drafts=len(drafts))
            return [Resemblances() for _ in drafts]
        return found

    async def _far_from_stored(
        self, drafts: Sequence[MemoryDraft], wanted: Sequence[int], vectors: Sequence[Vector]
    ) -> set[int]:
        """Indexes of `wanted` drafts no stored memory of their layer comes close to.

        Trigger: a batch of at least _BATCH_PROBE_MIN texts. Why: searching the stored vectors
        once per text cost more than embedding the batch (append_many at 100k rows), and most
        new texts resemble nothing. Outcome: one pass for the batch rules those out; the rest
        are judged one by one as before. "Close" is the duplicate band: a batch keeps only the
        duplicates of what it resembles (`append_many` names no candidates), and at the
        candidate band 3 % of fresh bench texts, none of them duplicates, were searched alone.

        A duplicate band above any cosine (merging turned off, as bench/scale.py builds its
        stores) rules every text out unsearched: probing a million rows for a band no vector
        can reach made that build quadratic.
        """
        assert self.indexer is not None
        if self.duplicates.duplicate_similarity > _MAX_COSINE:
            return set(wanted)
        if len(wanted) < _BATCH_PROBE_MIN:
            return set()
        far: set[int] = set()
        for layer in {drafts[i].layer for i in wanted}:
            mine = [n for n, i in enumerate(wanted) if drafts[i].layer is layer]
            close = await self.indexer.maybe_close(
                drafts[wanted[mine[0]]].project,
                layer,
                [vectors[n] for n in mine],
                min_similarity=self.duplicates.duplicate_similarity,
                neighbours=NEIGHBOURS,  # the candidates `resemblances` judges
            )
            if close is not None:
                far.update(wanted[n] for n, near in zip(mine, close, strict=True) if not near)
        return far

    async def _store_vectors(self, items: list[tuple[Memory, Vector]]) -> None:
        """Store vectors computed before the write; a failure leaves the rows to the backfill."""
        assert self.indexer is not None
        try:
            await self.indexer.store(items)
        except Exception:
            log.exception("vectors.index_failed", rows=len(items))
            self.indexer.schedule_backfill()

    def _prepare(
        self,
        project: str,
        layer: Layer,
        content: str,
        *,
        key: str | None,
        metadata: dict[str, JsonValue] | None,
        session_id: str | None,
        author: str | None = None,
        occurred_at: datetime | None = None,
        tags: Sequence[str] | None = None,
        supersedes: Sequence[int] | None = None,
    ) -> tuple[MemoryDraft, Redaction]:
        """Validate and redact one append into the draft to store (nothing is written)."""
        checked_tags = check_tags(tags)
        older = check_ids("supersedes", supersedes)
        if layer is Layer.SEMANTIC and key is None and metadata and "key" in metadata:
            meta_key = metadata["key"]
            if not isinstance(meta_key, str):
                raise InvalidInputError("metadata.key", "must be a string when given")
            key = meta_key
        if layer in (Layer.SEMANTIC, Layer.PROCEDURAL):
            key = check_key("key", key, self.limits)
        elif key is not None:
            raise InvalidInputError(
                "key", f"is only used by the semantic and procedural layers, not {layer.value}"
            )
        content, key, metadata, redaction = self._redact(content, key, metadata)
        if author is not None:
            gate = Redactor(self.redaction)
            author = gate.optional_text(check_author(author))
            redaction.counts.update(gate.report.counts)
        draft = self._draft(
            project,
            layer,
            content,
            key=key,
            metadata=metadata,
            session_id=session_id,
            author=author,
            occurred_at=occurred_at,
        )
        return draft.model_copy(update={"tags": checked_tags, "supersedes": older}), redaction

    async def append_many(self, project: str, items: Sequence[AppendItem]) -> list[AppendResult]:
        """Store several memories in one transaction: all of them, or (on bad input) none.

        Each item is validated, redacted and stored exactly as `append` would store it, and
        the results are in the order of `items`. The vectors of the batch are embedded in one
        model call, before the write: an item that normalises like, or near-duplicates, a
        stored memory or an earlier item of the batch adds no row (`duplicate`), as in
        `append`. Items restating stored memories are restated after the batch's transaction.

        Raises:
            InvalidInputError: An item is malformed (`field` names it, e.g. `items[3].content`),
                or there are more than APPEND_BATCH_MAX items.
        """
        if not 1 <= len(items) <= APPEND_BATCH_MAX:
            raise InvalidInputError(
                "items", f"must hold 1 to {APPEND_BATCH_MAX} memories (got {len(items)})"
            )
        prepared: list[tuple[MemoryDraft, Redaction]] = []
        for n, item in enumerate(items):
            try:
                prepared.append(
                    self._prepare(
                        project,
                        item.layer,
                        item.content,
                        key=item.key,
                        metadata=item.metadata,
                        session_id=item.session_id,
                        author=item.author,
                        occurred_at=item.occurred_at,
                        tags=item.tags,
                        supersedes=item.supersedes,
                    )
                )
            except InvalidInputError as exc:
                raise InvalidInputError(f"items[{n}].{exc.field}", exc.reason) from exc
        new_project = not await self.repo.has_project(check_project(project))
        drafts = [d for d, _ in prepared]
        now = self.clock.now()
        found = await self._resemblances(drafts)
        twins = batch_twins(drafts, found, self.duplicates)
        fresh = [i for i, f in enumerate(found) if f.duplicate is None and i not in twins]
        by_index = dict(
            zip(fresh, await self.repo.add_many([drafts[i] for i in fresh], now), strict=True)
        )
        # Near duplicates of stored memories restate them (after the batch's transaction).
        for i, seen in enumerate(found):
            if seen.duplicate is not None:
                twin = seen.duplicate.memory
                restated = await self.repo.restate(twin.project, twin.id, drafts[i], now)
                by_index[i] = AddOutcome(memory=restated or twin, status="duplicate")
        for later, first in twins.items():
            by_index[later] = AddOutcome(memory=by_index[first].memory, status="duplicate")
        outcomes = [by_index[i] for i in range(len(drafts))]
        written = [
            (o.memory, found[i].vector)
            for i, o in enumerate(outcomes)
            if o.status in ("created", "updated")
        ]
        if written and self.indexer is not None:
            embedded = [(m, v) for m, v in written if v is not None and m.key is None]
            if embedded:
                await self._store_vectors(embedded)
            rest = [m for m, v in written if v is None or m.key is not None]
            if rest:
                await self._index_batch(rest)
        # The working cap is applied once per session the batch added to, as after an append.
        sessions = dict.fromkeys(
            o.memory.session_id
            for o in outcomes
            if o.memory.layer is Layer.WORKING and o.status == "created"
        )
        trimmed = {
            session: await self.repo.trim_session(
                check_project(project), Layer.WORKING, session, keep=self.limits.working_cap
            )
            for session in sessions
        }
        await self._mind_cap(project, outcomes)
        log.info("memories.stored", count=len(outcomes), indexed=len(written))
        return [
            AppendResult(
                outcome=o,
                trimmed=trimmed.get(o.memory.session_id, 0)
                if o.memory.layer is Layer.WORKING and o.status == "created"
                else 0,
                redacted=r.as_dict(),
                new_project=new_project,
            )
            for o, (_, r) in zip(outcomes, prepared, strict=True)
        ]

    async def _mind_cap(self, project: str, outcomes: Sequence[AddOutcome]) -> None:
        """The storage cap's check after rows were added (a duplicate or an update adds none)."""
        if self.cap is not None and any(o.status == "created" for o in outcomes):
            await self.cap.after_write([check_project(project)])

    async def _index_batch(self, memories: list[Memory]) -> None:
        """Embed a batch of committed rows; a failure leaves them to the backfill (see below)."""
        assert self.indexer is not None
        try:
            await self.indexer.index_batch(memories)
        except Exception:
            log.exception("vectors.index_failed", rows=len(memories))
            self.indexer.schedule_backfill()

    def _redact(
        self, content: str, key: str | None, metadata: dict[str, JsonValue] | None
    ) -> tuple[str, str | None, dict[str, JsonValue] | None, Redaction]:
        """Redact credentials from what an append stores (after cheap size checks).

        Size is checked first so a huge input is refused before any pattern scans it.
        """
        gate = Redactor(self.redaction)
        content = check_text("content", content, max_chars=self.limits.max_content_chars)
        content = gate.text(content)
        if key is not None:
            # Keyed markers carry a hash of the secret: two secrets stay two keys.
            key = gate.key(key)
        if metadata is not None:
            metadata = gate.mapping(check_metadata(metadata, self.limits))
        return content, key, metadata, gate.report

    async def learn(
        self,
        project: str,
        key: str,
        value: str,
        *,
        metadata: dict[str, JsonValue] | None = None,
    ) -> AppendResult:
        """Upsert semantic knowledge `key` -> `value` (credentials redacted, as in append)."""
        # Checked here too so a bad value is reported under the name the caller used.
        check_text("value", value, max_chars=self.limits.max_content_chars)
        return await self.append(project, Layer.SEMANTIC, value, key=key, metadata=metadata)

    async def recall(self, project: str, key: str) -> RecallResult:
        """Read semantic knowledge by exact key, plus the procedural rules that apply to it.

        Not finding the key is a normal answer (value None), with the closest keys suggested.
        """
        project = check_project(project)
        # Redacted the way `learn` stored it, so a key holding a secret finds its fact.
        key = redact_key(check_key("key", key, self.limits), self.redaction)[0]
        value = await self.repo.get_by_key(project, Layer.SEMANTIC, key)
        rules: list[Memory] = []
        exact_rule = await self.repo.get_by_key(project, Layer.PROCEDURAL, key)
        if exact_rule is not None and exact_rule.superseded_by is None:  # else history
            rules.append(exact_rule)
        # Function words are left out as in `search` (unless nothing else is left): in an OR
        # query over keys each one matches most rows, and FTS5 walks all their postings
        # (recall at 1M rows: p50 13 ms with them).
        fts = to_fts5_query(key, drop_stopwords=self.ranking.keyword_stopwords)
        if fts is not None:
            for rule in await self.repo.search_keys(
                project, Layer.PROCEDURAL, fts, limit=_RULES_PER_RECALL * 4
            ):
                if rule.id not in {r.id for r in rules} and rule_applies(rule.key or "", key):
                    rules.append(rule)
        rules = rules[:_RULES_PER_RECALL]
        suggestions: list[str] = []
        if value is None and fts is not None:
            close = await self.repo.search_keys(project, Layer.SEMANTIC, fts, limit=5)
            suggestions = [m.key for m in close if m.key is not None]
        ids = ([value.id] if value else []) + [r.id for r in rules]
        handed = {m.id: m for m in await hand_out(self.repo, project, ids, self.clock.now())}
        return RecallResult(
            key=key,
            value=handed.get(value.id) if value else None,
            rules=[handed[r.id] for r in rules if r.id in handed],
            suggestions=suggestions,
        )

    async def search(self, request: SearchRequest) -> SearchResult:
        """Hybrid search: BM25 and vector candidates fused, then tier and recency signals.

        Trigger: the embedding model is still loading (or is "none", or failed). Why: a search
        waits for a loading model only briefly (the indexer's `model_wait`, which also covers
        a start-up backfill of rows without vectors). Outcome: past that, keyword search only,
        and a note in the result says so. The hits handed out are marked as accessed.

        Several phrasings (`query` and/or `queries`) are each ranked as one query would be,
        and their rankings fused by reciprocal rank (domain.ranking.fuse_phrasings).

        Raises:
            InvalidQueryError: A phrasing holds no word to search for.
            InvalidInputError: A filter is malformed, or no phrasing (or more than 5) is given.
        """
        project = check_project(request.project)
        limit = check_limit("limit", request.limit, self.limits)
        since, until = check_time_range(request.since, request.until)
        token_budget = check_token_budget(request.token_budget)
        phrasings = self._phrasings(request)
        pool = min(max(limit * _CANDIDATES_PER_HIT, _MIN_CANDIDATES), _MAX_CANDIDATES)
        filters = TextQuery(
            project=project,
            words=(),
            prefix_min_chars=self.ranking.keyword_prefix_min_chars,
            layer=request.layer,
            session_id=check_session(request.session_id),
            author=check_author(request.author),
            since=since,
            until=until,
            limit=pool,
            tags=check_tags(request.tags),
            include_superseded=request.include_superseded,
        )
        now = self.clock.now()
        if len(phrasings) == 1:
            field_name, text = phrasings[0]
            ranked, dropped, mode, notes = await self._rank_phrasing(
                field_name, text, request.mode, filters, now, limit, request.min_match
            )
        else:
            lists: list[list[SearchHit]] = []
            modes: set[SearchMode] = set()
            notes = []
            for field_name, text in phrasings:
                hits, _, used, said = await self._rank_phrasing(
                    field_name, text, request.mode, filters, now, pool, None
                )
                lists.append(hits)
                modes.add(used)
                notes += [n for n in said if n not in notes]
            mode = SearchMode.KEYWORD if SearchMode.KEYWORD in modes else request.mode
            fused = fuse_phrasings(lists, self.ranking.rrf_k)
            kept = [
                h
                for h in fused
                if request.min_match is None or h.signals.match.order >= request.min_match.order
            ]
            dropped = len(fused) - len(kept)
            ranked = kept[:limit]
        ranked, folded, older = await self._fold_versions(
            ranked, " ".join(t for _, t in phrasings), versions=request.versions
        )
        ranked, omitted = TokenAllowance(token_budget).prefix(ranked, lambda h: h.memory.content)
        if request.mark_used:
            rows = [h.memory for h in ranked]
            handed = {m.id: m for m in await hand_out_read(self.repo, project, rows, now)}
        else:
            handed = {h.memory.id: h.memory for h in ranked}
        hits = [
            SearchHit(memory=handed[h.memory.id], signals=h.signals)
            for h in ranked
            if h.memory.id in handed
        ]
        return SearchResult(
            hits=hits,
            mode=mode,
            omitted=omitted,
            notes=notes,
            dropped=dropped,
            folded={i: n for i, n in folded.items() if i in handed},
            older={i: n for i, n in older.items() if i in handed and n in handed},
        )

    async def _fold_versions(
        self, ranked: list[SearchHit], query: str, *, versions: bool = False
    ) -> tuple[list[SearchHit], dict[int, int], dict[int, int]]:
        """Several versions of one fact among the hits: the newest stands for them all.

        Trigger: hits that restate one another (domain.duplicates.restates: close by their
        stored vectors and their words, numbers and names allowed to differ). Why: a
        correction written without `supersedes` must still win over what it corrects.
        Outcome: the newest takes the best-ranked one's place; the others are folded away
        and counted. Hits merely close to one another (the candidate band: a correction and
        what it corrects) all stay, newest first in the places they held; with `versions`,
        each such older hit is also named with the newer one it is close to (the third
        value: {older memory id: newer memory id}). Without stored vectors nothing moves.
        """
        reader = self.indexer.vectors if self.indexer is not None else self.stored_vectors
        if reader is None or len({h.memory.created_at for h in ranked}) < 2:
            return ranked, {}, {}  # versions are written at different times
        hashes = [content_hash(embedding_text(h.memory)) for h in ranked]
        try:
            stored = await reader.vectors_by_hash(hashes)
        except Exception:
            log.exception("search.fold_failed")
            return ranked, {}, {}
        vectors = [stored.get(h) for h in hashes]
        numbers, days, names, _ = anchors(query)
        named = numbers | days | names

        similarity = _version_similarity(ranked, vectors)

        ages = [(h.memory.created_at, h.memory.id) for h in ranked]
        kept, folded = fold_newest(
            [h.memory.content for h in ranked], ages, similarity, self.duplicates
        )

        # Then, among the hits left, a newer close one (a correction written without
        # `supersedes`) goes before what it corrects.
        marks: dict[int, frozenset[str]] = {}

        def named_in(i: int) -> frozenset[str]:
            if i not in marks:
                numbers, days, names, _ = anchors(ranked[i].memory.content)
                marks[i] = named & (numbers | days | names)
            return marks[i]

        band = self.duplicates.candidate_similarity

        def alike(a: int, b: int) -> float | None:
            close = similarity(kept[a], kept[b])
            if close is None or not _versions(ranked, ages, (kept[a], kept[b]), close, band, query):
                return None
            # A query naming what only one of them holds ("note 7": a number, a name, a day)
            # asks for that one: a newer "note 10" does not go before it.
            if named and named_in(kept[a]) != named_in(kept[b]):
                return None
            # What a conversation said (captured turns, a sub-agent's result, a digest) is a
            # record, not a fact with versions: its turns are close to one another (one topic,
            # cosine 0.65-0.85 under MiniLM), and ordering them by time buried the best match
            # (LoCoMo dev, captured turns, search limit 100: R@10 0.81 -> 0.58).
            if _recorded(ranked[kept[a]].memory) or _recorded(ranked[kept[b]].memory):
                return None
            return close

        order = newest_first([ages[i] for i in kept], alike, LOOSE_SIMILARITY)
        ids = [ranked[i].memory.id for i in kept]
        older = _followed(ids, [ages[i] for i in kept], alike) if versions else {}
        folded_ids = {ranked[i].memory.id: n for i, n in folded.items()}
        return [ranked[kept[i]] for i in order], folded_ids, older

    def _phrasings(self, request: SearchRequest) -> list[tuple[str, str]]:
        """(field, text) of each distinct phrasing: `query` first, then `queries` in order."""
        texts: list[tuple[str, str]] = []
        max_chars = self.limits.max_content_chars
        if request.query is not None:
            texts.append(("query", check_text("query", request.query, max_chars=max_chars)))
        if len(request.queries) > MAX_QUERIES:
            raise InvalidInputError(
                "queries", f"must hold at most {MAX_QUERIES} phrasings (got {len(request.queries)})"
            )
        for n, text in enumerate(request.queries):
            field_name = f"queries[{n}]"
            texts.append((field_name, check_text(field_name, text, max_chars=max_chars)))
        if not texts:
            raise InvalidInputError(
                "query", f"is required (or `queries`: 1-{MAX_QUERIES} phrasings of the question)"
            )
        # The same text twice is one phrasing (the first field names it).
        distinct: dict[str, str] = {}
        for field_name, text in texts:
            distinct.setdefault(text, field_name)
        return [(f, t) for t, f in distinct.items()]

    async def _rank_phrasing(
        self,
        field_name: str,
        query_text: str,
        mode: SearchMode,
        filters: TextQuery,
        now: datetime,
        limit: int,
        min_match: Match | None,
    ) -> tuple[list[SearchHit], int, SearchMode, list[str]]:
        """One phrasing's ranked hits (not handed out), how many min_match left out, the mode."""
        words = search_words(query_text, drop_stopwords=self.ranking.keyword_stopwords)
        filters = filters.model_copy(update={"words": words})
        text_matches, vector_matches, vector_rows, notes = await self._first_candidates(
            query_text, mode, filters
        )
        if mode is not SearchMode.KEYWORD and vector_matches is None:
            mode = SearchMode.KEYWORD
        if mode is SearchMode.KEYWORD and not words:
            raise InvalidQueryError(field_name, "needs at least one word of letters or digits")
        if words and mode is not SearchMode.SEMANTIC and text_matches is None:
            text_matches = await self.repo.search_text(filters)
        candidates: dict[int, Candidate] = {}
        for rank, match in enumerate(text_matches or [], start=1):
            candidates[match.memory.id] = Candidate(
                memory=match.memory, bm25_rank=rank, bm25=match.bm25
            )
        if vector_matches is not None:
            await self._add_vector_candidates(candidates, filters, vector_matches, vector_rows)
        ranked, dropped = rank_candidates(
            list(candidates.values()),
            mode,
            tier_cutoffs(now, self.tiers),
            self.ranking,
            limit,
            query_words=name_words(query_text),
            search_terms=words,
            min_match=min_match,
            query_time=query_time(query_text, now),
        )
        return ranked, dropped, mode, notes

    async def _first_candidates(
        self, query_text: str, mode: SearchMode, filters: TextQuery
    ) -> tuple[
        list[TextMatch] | None, list[VectorMatch] | None, dict[int, Memory] | None, list[str]
    ]:
        """Hybrid keyword matches, the vector matches (None without a model) and their rows.

        Trigger: a hybrid search. Why: its halves are independent, and one after the other
        they cost their sum (7.6 + 6 ms at 100k rows). Outcome: the keyword search runs (on
        the second connection, when there is one) while the query is embedded in a worker
        thread and the vector search then runs on the main connection. A start-up backfill
        still running is waited for within the model's wait, so rows it is embedding can be
        found by meaning.

        If the keyword half is still running when the vector matches are known, the rows of
        the vector matches are read then (they are otherwise read after both halves, for the
        matches the keyword half did not return): at 100k rows the keyword half is the longer
        one, and this moves ~1.4 ms of row reads off the path that follows it. None when they
        were not read here.
        """
        text_matches: list[TextMatch] | None = None
        vector_matches: list[VectorMatch] | None = None
        vector_rows: dict[int, Memory] | None = None
        notes: list[str] = []
        started = asyncio.get_running_loop().time()
        keyword = (
            asyncio.create_task((self.keyword_reader or self.repo).search_text(filters))
            if filters.words and mode is SearchMode.HYBRID
            else None
        )
        try:
            if mode is not SearchMode.KEYWORD and self.indexer is not None:
                vector = await self.indexer.embed_query(query_text)
                if vector is not None:
                    elapsed = asyncio.get_running_loop().time() - started
                    left = self.indexer.model_wait - elapsed
                    if not await self.indexer.backfill_settled(left):
                        notes.append(
                            "Some memories are still being embedded in the background; until "
                            "then they are found by their words only."
                        )
                    vector_matches = await self.indexer.vectors.search_vectors(
                        filters.project, vector, layer=filters.layer, limit=filters.limit
                    )
                    if keyword is not None and not keyword.done():
                        vector_rows = await self._vector_rows(filters, vector_matches, {})
            if keyword is not None:
                text_matches = await keyword
        finally:
            if keyword is not None and not keyword.done():
                keyword.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keyword
        if mode is not SearchMode.KEYWORD and vector_matches is None:
            notes.insert(0, self._keyword_fallback_note())
        return text_matches, vector_matches, vector_rows, notes

    async def _index_committed(self, memory: Memory) -> NearDuplicate | None:
        """Index a row that is already committed; a failure must not undo or hide the write.

        Trigger: embedding or storing the vector fails (model error, storage contention).
        Why: the row is stored; reporting the append as failed would be false and invite a
        retry. Outcome: the failure is logged and a background backfill gives the row its
        vector later; until then keyword search finds it.
        """
        assert self.indexer is not None
        try:
            return await self.indexer.index_new(
                memory, duplicate_similarity=self.ranking.duplicate_similarity
            )
        except EmbeddingUnavailableError as exc:
            log.info("vectors.index_skipped", memory_id=memory.id, reason=exc.reason)
            self.indexer.schedule_backfill()
            return None
        except Exception:
            log.exception("vectors.index_failed", memory_id=memory.id)
            self.indexer.schedule_backfill()
            return None

    def _keyword_fallback_note(self) -> str:
        if self.indexer is None:
            return "Semantic search is off (no embedding model configured); used keyword search."
        if self.indexer.source.failure is not None:
            # The reason stays in the server log: it may name files the model should not see.
            return (
                "Semantic search is unavailable: the embedding model failed to load (details "
                "are in the server log); used keyword search."
            )
        waited = self.indexer.model_wait
        loading = f"was still loading after {waited:g} s" if waited else "is still loading"
        return f"The embedding model {loading}; used keyword search for this query."

    async def _vector_rows(
        self, filters: TextQuery, matches: list[VectorMatch], known: dict[int, Candidate]
    ) -> dict[int, Memory]:
        """Rows of the vector matches not in `known` that pass the filters and the floor."""
        floor = self.ranking.min_similarity
        wanted = [m.id for m in matches if m.id not in known and 1.0 - m.distance >= floor]
        return {m.id: m for m in await self.repo.get_many(filters.project, wanted, filters)}

    async def _add_vector_candidates(
        self,
        candidates: dict[int, Candidate],
        filters: TextQuery,
        matches: list[VectorMatch],
        rows: dict[int, Memory] | None = None,
    ) -> None:
        """Add the vector matches to `candidates`; `rows`: theirs, if already read."""
        if rows is None:
            rows = await self._vector_rows(filters, matches, candidates)
        # Vector hits are ranked among those that pass the filters, like the keyword list.
        rank = 0
        for match in matches:
            if 1.0 - match.distance < self.ranking.min_similarity:
                # Nearest neighbours always exist; below the floor they are noise, and handing
                # them out would mark unrelated memories as used.
                continue
            known = candidates.get(match.id)
            memory = known.memory if known else rows.get(match.id)
            if memory is None:
                continue
            rank += 1
            candidates[match.id] = Candidate(
                memory=memory,
                bm25_rank=known.bm25_rank if known else None,
                bm25=known.bm25 if known else None,
                vector_rank=rank,
                vector_distance=match.distance,
            )

    async def load_context(
        self,
        project: str,
        *,
        layer: Layer | None = None,
        limit: int = 10,
        token_budget: int | None = None,
        include_superseded: bool = False,
    ) -> ContextResult:
        """The most recently used memories: ACTIVE first, then RECENT, ARCHIVED, EXPIRED.

        Superseded memories (history) only when `include_superseded`.

        Ordering by reference time newest first is the same as ordering by live tier and then
        by last access, because tiers are bands of that same time.
        """
        project = check_project(project)
        limit = check_limit("limit", limit, self.limits)
        now = self.clock.now()
        cutoffs = tier_cutoffs(now, self.tiers)
        token_budget = check_token_budget(token_budget)
        rows = await self.repo.list_recent(
            project, layer, limit=limit, include_superseded=include_superseded
        )
        rows, omitted = TokenAllowance(token_budget).prefix(rows, lambda m: m.content)
        before = {m.id: classify_tier(m.reference_time, cutoffs) for m in rows}
        handed = await hand_out(self.repo, project, [m.id for m in rows], now)
        items = [ContextItem(memory=m, tier_before=before[m.id]) for m in handed]
        return ContextResult(items=items, omitted=omitted)

    async def read(self, project: str, memory_id: int) -> Memory:
        """One memory by id, handed out (marked as used).

        Raises:
            MemoryNotFoundError: No such id in this project.
        """
        project = check_project(project)
        found = []
        if 0 < memory_id < _MAX_ID:  # larger numbers cannot be ids (SQLite integers)
            found = await hand_out(self.repo, project, [memory_id], self.clock.now())
        if not found:
            raise MemoryNotFoundError(memory_id, project)
        return found[0]

    async def peek(self, project: str, memory_id: int) -> Memory:
        """One memory by id, as stored: unlike `read`, not marked as used (a person looking).

        Raises:
            MemoryNotFoundError: No such id in this project.
        """
        project = check_project(project)
        memory = await self.repo.get(project, memory_id) if 0 < memory_id < _MAX_ID else None
        if memory is None:
            raise MemoryNotFoundError(memory_id, project)
        return memory

    async def neighbours(self, memory: Memory, *, limit: int = 5) -> list[tuple[Memory, float]]:
        """The project's memories nearest in meaning to a stored one, with their similarity.

        Uses the row's stored vector (no model call); none when it has no vector yet or no
        model is configured. Nothing is marked as used.
        """
        if self.indexer is None:
            return []
        text_hash = content_hash(embedding_text(memory))
        vector = (await self.indexer.vectors.vectors_by_hash([text_hash])).get(text_hash)
        if vector is None:
            return []
        matches = await self.indexer.vectors.search_vectors(
            memory.project, vector, layer=None, limit=limit + 1
        )
        similar = [
            (m.id, 1.0 - m.distance)
            for m in matches
            if m.id != memory.id and 1.0 - m.distance >= self.ranking.min_similarity
        ][:limit]
        found: list[tuple[Memory, float]] = []
        for memory_id, similarity in similar:
            row = await self.repo.get(memory.project, memory_id)
            if row is not None:
                found.append((row, round(similarity, 4)))
        return found

    async def browse(self, query: BrowseQuery) -> list[Memory]:
        """A page of a project's memories, newest first, none of them marked as used.

        Raises:
            InvalidInputError: A filter is malformed (the field is named).
        """
        check_project(query.project)
        check_limit("limit", query.limit, self.limits)
        check_session(query.session_id)
        if query.before_id is not None and query.before_id < 1:
            raise InvalidInputError("before_id", f"must be a positive id (got {query.before_id})")
        return await self.repo.browse(query, tier_cutoffs(self.clock.now(), self.tiers))

    async def forget(self, project: str, memory_id: int) -> Memory:
        """Delete one memory by id and return what it held.

        Raises:
            MemoryNotFoundError: No such id in this project.
        """
        project = check_project(project)
        memory = await self.repo.get(project, memory_id)
        if memory is None or await self.repo.delete(project, [memory_id]) == 0:
            raise MemoryNotFoundError(memory_id, project)
        log.info("memory.forgotten", memory_id=memory_id)
        return memory

    async def clear(self, project: str, layer: Layer | None, *, confirm: bool) -> int:
        """Delete a whole layer (or every layer) of a project; needs `confirm`.

        Raises:
            ConfirmationRequiredError: `confirm` was not true.
        """
        project = check_project(project)
        if not confirm:
            raise ConfirmationRequiredError("clear")
        deleted = await self.repo.delete_layer(project, layer)
        log.info("memories.cleared", layer=layer.value if layer else "*", deleted=deleted)
        return deleted

    async def compact(
        self,
        project: str,
        layer: Layer,
        *,
        keep_last: int = 10,
        summarize_older: bool = True,
        session_id: str | None = None,
        progress: Callable[[int, int], Awaitable[None]] | None = None,
    ) -> CompactResult:
        """Shrink a layer to its newest `keep_last` entries.

        working/episodic: older entries are replaced by "[Summary of N entries]" entries, one
        per 50 (or just dropped when `summarize_older` is false). semantic: a no-op, since every key
        is current knowledge. procedural: the newest `keep_last` rules are kept.
        `progress(done, total)` is awaited as entries are summarised, and once more (done equal
        to total, one more than the entries) when the replacement has been written.
        """
        project = check_project(project)
        if keep_last < 0:
            raise InvalidInputError("keep_last", f"must be 0 or more (got {keep_last})")
        if layer is Layer.SEMANTIC:
            return CompactResult(removed=0, kept=0, summaries=[])
        rows = await self.repo.list_layer(
            project, layer, check_session(session_id), newest_first=True
        )
        older = rows[keep_last:]
        if not older:
            return CompactResult(removed=0, kept=len(rows), summaries=[])
        drafts: list[MemoryDraft] = []
        steps, summarised = len(older) + 1, 0  # every entry, then the one write
        if progress is not None:
            await progress(0, steps)
        if summarize_older and layer in (Layer.WORKING, Layer.EPISODIC):
            for chunk in chunk_entries(older):
                text = summarize_entries(chunk, max_chars=self.limits.max_content_chars)
                draft = self._draft(
                    project,
                    layer,
                    text,
                    key=None,
                    metadata={
                        "compacted_ids": [m.id for m in chunk],
                        "covers_from": chunk[0].created_at.isoformat(),
                        "covers_until": chunk[-1].created_at.isoformat(),
                    },
                    session_id=session_id,
                )
                # Dated like its newest entry: a later compaction keeps the newest real entries
                # rather than the summaries, and time filters place the summary in its period.
                # Its dates are its entries' (the summary's own "yesterday" would count from now).
                dates = normalise_dates(" ".join(m.dates for m in chunk if m.dates))
                drafts.append(
                    draft.model_copy(update={"created_at": chunk[-1].created_at, "dates": dates})
                )
                summarised += len(chunk)
                if progress is not None:
                    await progress(summarised, steps)
        summaries = await self.repo.replace_with(
            project, [m.id for m in older], drafts, self.clock.now()
        )
        if progress is not None:
            await progress(steps, steps)
        if summaries and self.indexer is not None:
            self.indexer.schedule_backfill()  # summaries are new rows without vectors
        log.info("memories.compacted", layer=layer.value, removed=len(older))
        return CompactResult(removed=len(older), kept=len(rows) - len(older), summaries=summaries)
