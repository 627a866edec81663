"""Value objects shared by services and storage backends."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, JsonValue

from memory_core.domain.frozen import Frozen as _Frozen
from memory_core.domain.match import Match

__all__ = [
    "AddOutcome",
    "BrowseQuery",
    "Layer",
    "Memory",
    "MemoryDraft",
    "PruneOutcome",
    "RankSignals",
    "SearchHit",
    "SearchMode",
    "StoreStats",
    "TextMatch",
    "TextQuery",
    "Tier",
    "TierCutoffs",
    "VectorMatch",
]

Metadata = dict[str, JsonValue]


class SearchMode(StrEnum):
    """Which retrieval lists a search fuses."""

    HYBRID = "hybrid"
    KEYWORD = "keyword"
    SEMANTIC = "semantic"


class Layer(StrEnum):
    """The four memory layers."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class Tier(StrEnum):
    """Recency tiers, from the most to the least recently used."""

    ACTIVE = "ACTIVE"
    RECENT = "RECENT"
    ARCHIVED = "ARCHIVED"
    EXPIRED = "EXPIRED"


class MemoryDraft(_Frozen):
    """A memory about to be written; ids and timestamps are the store's to assign."""

    project: str
    layer: Layer
    content: str
    key: str | None = None
    metadata: Metadata = Field(default_factory=dict)
    session_id: str | None = None
    author: str | None = None
    content_hash: str
    token_count: int
    created_at: datetime | None = Field(
        None, description="Back-date the row (compaction summaries sit where their entries were)."
    )
    occurred_at: datetime | None = Field(
        None, description="When it happened or was said, when the client said (else created_at)."
    )
    dates: str | None = Field(
        None, description="The dates the content mentions, resolved (domain.dates.format_spans)."
    )
    tags: tuple[str, ...] = Field((), description="Labels to filter by (domain.tags).")
    supersedes: tuple[int, ...] = Field(
        (), description="Ids of older memories of the project this one replaces."
    )


class Memory(_Frozen):
    """One stored row of context_snapshots."""

    id: int
    project: str
    layer: Layer
    key: str | None
    content: str
    metadata: Metadata
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime | None
    access_count: int
    tier: Tier
    content_hash: str
    token_count: int
    author: str | None = Field(None, description="Who said or wrote it, when the client said.")
    occurred_at: datetime | None = Field(
        None, description="When it happened or was said, when the client said (else created_at)."
    )
    dates: str | None = Field(
        None,
        description="The dates its text mentions, resolved against its own time: ISO days and "
        "`start..end` ranges, space separated, earliest first.",
    )
    pinned: bool = Field(False, description="Never expires or gets pruned.")
    superseded_by: int | None = Field(
        None, description="The newer memory that replaced this one (then it is history)."
    )
    tags: tuple[str, ...] = Field((), description="Labels to filter by.")

    @property
    def happened_at(self) -> datetime:
        """The time its relative dates count from: `occurred_at`, else the creation."""
        return self.occurred_at or self.created_at

    @property
    def reference_time(self) -> datetime:
        """The instant tiers are computed from: the last access, else the creation."""
        return self.last_accessed or self.created_at


class AddOutcome(_Frozen):
    """What an add did: `created`, `updated` (keyed), or found it `unchanged`/`duplicate`."""

    memory: Memory
    status: Literal["created", "updated", "unchanged", "duplicate"]
    previous_content: str | None = None


class TierCutoffs(_Frozen):
    """Absolute instants separating the tiers at one `now`.

    A row is ACTIVE if its reference time is after `active_after`, else RECENT if after
    `recent_after`, and so on.
    """

    now: datetime
    active_after: datetime
    recent_after: datetime
    archived_after: datetime


def _check_word(word: str) -> str:
    # Python's re, as domain.fts_query splits words (pydantic's `pattern` is Rust's regex,
    # whose \w differs from Python's on a few characters such as "²").
    if not re.fullmatch(r"[^\W_]+", word):
        raise ValueError("a search word must be letters and digits only")
    return word


class TextQuery(_Frozen):
    """A keyword search: the words to look for (any of them) and the rows to look in.

    Each backend turns `words` into its own query language (an FTS5 MATCH expression, a
    tsquery); the pattern guarantees a word is letters and digits only, so it can be quoted as
    a literal without escaping.
    """

    project: str
    words: tuple[Annotated[str, AfterValidator(_check_word)], ...]
    prefix_min_chars: int = Field(
        0, ge=0, description="Words this long or longer also match words they begin (0: none)."
    )
    layer: Layer | None = None
    session_id: str | None = None
    author: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50
    tags: tuple[str, ...] = Field((), description="Only rows holding every one of these tags.")
    include_superseded: bool = Field(
        False, description="Rows a newer memory replaced too (history, hidden by default)."
    )


class BrowseQuery(_Frozen):
    """A page of a project's memories, newest first, narrowed by layer, tier, tags, ...

    Paging is by id (`before_id`: the last id of the previous page), so rows written while
    a client pages (new ids, above the first page) never shift or repeat a later page.
    """

    project: str
    layer: Layer | None = None
    tier: Tier | None = Field(None, description="The tier as of now (from the reference time).")
    session_id: str | None = None
    before_id: int | None = Field(None, description="Only rows with a smaller id (next page).")
    limit: int = 50
    tags: tuple[str, ...] = Field((), description="Only rows holding every one of these tags.")
    author: str | None = None
    since: datetime | None = Field(None, description="Created at or after this instant.")
    until: datetime | None = Field(None, description="Created before this instant.")
    pinned: bool | None = Field(None, description="Only pinned (True) or unpinned (False) rows.")
    superseded: bool | None = Field(
        None, description="Only superseded (True) or current (False) rows; None: both."
    )
    ids: tuple[int, ...] = Field((), description="Only these ids (a forget by id).")


class TextMatch(_Frozen):
    """A keyword match with its BM25 value (lower is better, as FTS5 reports it)."""

    memory: Memory
    bm25: float


class VectorMatch(_Frozen):
    """A vector neighbour: row id and cosine distance (0 identical, 2 opposite)."""

    id: int
    distance: float


class RankSignals(_Frozen):
    """Why a hit ranked where it did."""

    bm25_rank: int | None = Field(
        description="Rank in the project's keyword (BM25) list, if matched."
    )
    vector_rank: int | None = Field(description="Rank in the vector list, if retrieved.")
    vector_distance: float | None = Field(description="Cosine distance to the query.")
    relevance: float = Field(
        description="Fused relevance, normalised so the most relevant candidate has 1."
    )
    session_lift: float = Field(
        description="The part of `relevance` that the memory's session adds: its other "
        "strong matches lift it (0 without a session, or alone in it).",
    )
    author_lift: float = Field(
        0.0, description="The part of `relevance` added because the query names its author."
    )
    date_lift: float = Field(
        0.0,
        description="The part of `relevance` added because its dates match the time the query "
        'names, or because it says when something happened and the query asks "when".',
    )
    follow_lift: float = Field(
        0.0,
        description="The part of `relevance` added because the memory that follows it in its "
        "session matches the query.",
    )
    match: Match = Field(
        Match.WEAK,
        description="Absolute match strength from the cosine similarity and the share of the "
        "query's words the memory holds (thresholds measured on LoCoMo; unlike `relevance`, "
        "comparable across queries).",
    )
    word_share: float = Field(0.0, description="Share of the query's words the memory holds.")
    tier: Tier
    tier_boost: float
    recency: float
    score: float


class SearchHit(_Frozen):
    """A memory handed out by search, with the signals behind its rank."""

    memory: Memory
    signals: RankSignals


class StoreStats(_Frozen):
    """Counts and health figures of one project."""

    project: str
    total: int
    by_tier: dict[Tier, int]
    by_layer: dict[Layer, int]
    content_bytes: int
    database_bytes: int
    oldest: datetime | None
    newest: datetime | None
    stale_tiers: int
    # Rows never handed out by a search, recall or load (access_count 0).
    never_accessed: int
    # Pinned rows (never expire or get pruned), and rows a newer memory superseded (history:
    # counted in `total` and the tiers, left out of search and listings unless asked).
    pinned: int = 0
    superseded: int = 0


class PruneOutcome(_Frozen):
    """The ids a prune deleted, or would delete when `dry_run`."""

    ids: list[int]
    dry_run: bool
