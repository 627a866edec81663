"""The interfaces services depend on; storage backends and clocks implement them."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memory_core.domain.models import (
    AddOutcome,
    BrowseQuery,
    Layer,
    Memory,
    MemoryDraft,
    PruneOutcome,
    StoreStats,
    TextMatch,
    TextQuery,
    TierCutoffs,
    VectorMatch,
)
from memory_core.domain.versions import ForgetReceipt, MemoryChange, MemoryVersion, UpdateOutcome

__all__ = [
    "Clock",
    "JobLeases",
    "KeywordSearch",
    "MemoryRepository",
    "VectorIndex",
]

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector


class Clock(Protocol):
    """Where "now" comes from; tests inject a frozen one."""

    def now(self) -> datetime:
        """Return the current instant, timezone-aware UTC."""
        ...


class KeywordSearch(Protocol):
    """Keyword search alone: what hybrid search can run on a second connection."""

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        """Keyword candidates by BM25, best first (see MemoryRepository.search_text)."""
        ...


class MemoryRepository(Protocol):
    """Storage of context_snapshots. Every method is scoped to one project unless it says so.

    A backend only stores and retrieves: ranking, tier maths and validation live in the domain
    and services, so a second backend (PostgreSQL) is a second class, not a rewrite.
    """

    async def add(self, draft: MemoryDraft, now: datetime) -> AddOutcome:
        """Insert a draft atomically, honouring the store's identity rules.

        A keyed draft (semantic/procedural) upserts on (project, layer, key); an unkeyed one
        returns the existing row when the same content is already in (project, layer).
        """
        ...

    async def add_many(self, drafts: Sequence[MemoryDraft], now: datetime) -> list[AddOutcome]:
        """Add drafts in ONE transaction (all or none), each outcome as `add` would give it.

        Outcomes are in the order of `drafts`; a draft repeating an earlier one of the same
        batch gets what `add` would give the second of two calls (duplicate or unchanged).
        """
        ...

    async def get(self, project: str, memory_id: int) -> Memory | None:
        """One row by id, without touching its access fields."""
        ...

    async def get_many(self, project: str, ids: Sequence[int], query: TextQuery) -> list[Memory]:
        """Rows by id that pass `query`'s filters (layer, session, time range), in id order."""
        ...

    async def get_by_key(self, project: str, layer: Layer, key: str) -> Memory | None:
        """One keyed row, without touching its access fields."""
        ...

    async def list_layer(
        self, project: str, layer: Layer, session_id: str | None, *, newest_first: bool
    ) -> list[Memory]:
        """All rows of a layer (optionally of one session), ordered by creation."""
        ...

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        """Keyword candidates, best BM25 first, without touching access fields.

        A row matches when its content, key or metadata values hold any of `query.words`, or
        a word that one of them begins when it is at least `query.prefix_min_chars` long; a
        whole-word match ranks above a prefix-only one, a metadata match below a content one.
        """
        ...

    async def search_keys(
        self, project: str, layer: Layer, fts: str, *, limit: int
    ) -> list[Memory]:
        """Rows of a layer whose key matches `fts`, best first."""
        ...

    async def list_recent(
        self,
        project: str,
        layer: Layer | None,
        *,
        limit: int,
        include_superseded: bool = False,
    ) -> list[Memory]:
        """Rows most recently used (or created) first; superseded rows only when asked."""
        ...

    async def browse(self, query: BrowseQuery, cutoffs: TierCutoffs) -> list[Memory]:
        """Rows passing `query`'s filters, newest id first, without touching access fields.

        `query.tier` is the live tier as of `cutoffs` (from the reference time), not the
        stored one, so the list agrees with the stats' counts.
        """
        ...

    async def use_ages(self, project: str, now: datetime, *, max_days: int) -> dict[int, int]:
        """Rows per whole day since their reference time (ages above `max_days` count there)."""
        ...

    async def hand_out(self, project: str, ids: Sequence[int], at: datetime) -> list[Memory]:
        """Mark rows as handed to a client and return them, in one transaction.

        Sets last_accessed=at, access_count+=1 and tier ACTIVE, and returns the rows as they are
        after that update, in the order of `ids`; ids no longer present are left out.
        """
        ...

    async def record_access(self, project: str, ids: Sequence[int], at: datetime) -> None:
        """Record an access on each row, as `hand_out` does, without reading them back.

        For rows the caller has just read (domain.tiers.handed_out gives them as updated). The
        write may complete after this returns (a serving SQLite process runs it after the
        request), but always before this process's next statement on the store.
        """
        ...

    async def delete(self, project: str, ids: Sequence[int]) -> int:
        """Delete rows by id; returns how many existed."""
        ...

    async def delete_layer(self, project: str, layer: Layer | None) -> int:
        """Delete every row of a layer, or of the whole project when `layer` is None."""
        ...

    async def trim_session(
        self, project: str, layer: Layer, session_id: str | None, *, keep: int
    ) -> int:
        """Keep only the newest `keep` rows of a project+layer+session; returns rows deleted."""
        ...

    async def replace_with(
        self, project: str, ids: Sequence[int], drafts: Sequence[MemoryDraft], now: datetime
    ) -> list[Memory]:
        """Delete `ids` and add `drafts` in one transaction; returns the new rows."""
        ...

    async def recalculate_tiers(self, cutoffs: TierCutoffs, project: str | None) -> int:
        """Re-derive memory_tier for every row (of one project, or all); returns rows changed."""
        ...

    async def prune_expired(
        self, cutoffs: TierCutoffs, project: str | None, *, limit: int | None, dry_run: bool
    ) -> PruneOutcome:
        """Delete EXPIRED rows (by reference time), least accessed first, then oldest, to `limit`.

        Tiers are recomputed in the same transaction first, so a row used since the last
        recalculation is never deleted on the strength of a stale tier.
        """
        ...

    async def delete_expired(self, ids: Sequence[int], cutoffs: TierCutoffs) -> list[int]:
        """Delete, in one transaction, those of `ids` that are EXPIRED by their reference time.

        The live condition (last access, else creation, at or before `archived_after`) is
        checked in the DELETE itself, so a row used since it was listed is kept. Any project;
        returns the ids deleted, ascending.
        """
        ...

    async def restate(
        self, project: str, memory_id: int, draft: MemoryDraft, now: datetime
    ) -> Memory | None:
        """`draft` restates (near-duplicates) a stored row: refresh that row as a duplicate.

        Its reference time moves (not counted as a read), the draft's metadata keys and tags
        are merged in, and the rows `draft.supersedes` are marked; no row is added. None when
        the row is not in the project.
        """
        ...

    async def update(
        self, project: str, memory_id: int, change: MemoryChange, now: datetime
    ) -> UpdateOutcome:
        """Apply `change` to a row in one transaction, its previous version kept as history.

        Returns the row before and after (both the same when nothing changed), nothing when
        the row is not in the project, or `duplicate_of` (and changes nothing) when another
        unkeyed row of the same identity already holds the new text.
        """
        ...

    async def versions(self, project: str, memory_id: int) -> list[MemoryVersion]:
        """Earlier versions of a row, oldest first."""
        ...

    async def set_pinned(self, project: str, ids: Sequence[int], pinned: bool) -> list[Memory]:
        """Pin (never expire or prune) or unpin rows; returns those of the project, as now."""
        ...

    async def superseded_rows(self, project: str, memory_id: int) -> list[Memory]:
        """The rows `memory_id` superseded (their `superseded_by` is it), newest first."""
        ...

    async def forget(self, query: BrowseQuery, *, dry_run: bool, sample: int) -> ForgetReceipt:
        """Delete every row `query` selects (ignoring its paging), or count them when `dry_run`.

        The receipt counts what the rows had in every place (row, vector, keyword index,
        versions, tags) and, after a delete, what is left of them there.
        """
        ...

    async def stats(self, project: str, cutoffs: TierCutoffs) -> StoreStats:
        """Counts per live tier and layer, sizes and dates of one project."""
        ...

    async def projects(self) -> list[str]:
        """Every project that holds at least one row."""
        ...

    async def has_project(self, project: str) -> bool:
        """Whether a project holds at least one memory (one index lookup)."""
        ...

    async def expired_page(
        self,
        project: str,
        cutoffs: TierCutoffs,
        *,
        after: tuple[datetime, int] | None,
        limit: int,
    ) -> list[Memory]:
        """A page of what an unlimited prune would delete, oldest reference time then id first.

        `after`: the (reference time, id) of the previous page's last row. Reads only the
        page, whatever the store's size (storage/*/expired_pages.py).
        """
        ...

    async def count_expired(self, project: str, cutoffs: TierCutoffs, *, cap: int) -> int:
        """How many rows an unlimited prune would delete, counted to `cap + 1` at most."""
        ...


class VectorIndex(Protocol):
    """Vectors of memories, scoped by project; kept apart from rows so backends can differ."""

    async def ensure_model(self, model_id: str, dims: int) -> None:
        """Record the model on first use; refuse a store written by another model.

        Raises:
            SchemaMismatchError: The store holds vectors of a different model or size.
        """
        ...

    async def reset_model(self, model_id: str, dims: int) -> None:
        """Drop every vector and record a new model (the first step of a reindex)."""
        ...

    async def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of any rows whose embedded text has these hashes."""
        ...

    async def put_vectors(self, items: Sequence[tuple[Memory, str, Vector]]) -> None:
        """Store (replace) vectors as (row, hash of the text embedded, vector).

        Rows deleted meanwhile are skipped.
        """
        ...

    async def search_vectors(
        self, project: str, vector: Vector, *, layer: Layer | None, limit: int
    ) -> list[VectorMatch]:
        """Nearest rows of a project by cosine distance, nearest first."""
        ...

    async def missing_vectors(self, *, limit: int) -> list[Memory]:
        """Rows that have no vector yet (any project), oldest first."""
        ...

    async def vector_stats(self) -> tuple[int, int]:
        """(rows with a vector, rows without one) across the store."""
        ...


class JobLeases(Protocol):
    """Who runs a scheduled job's fire: yields None to run it, else why this process skips."""

    def claim(self, job: str, slot: datetime) -> AbstractAsyncContextManager[str | None]:
        """Claim `job` for the schedule slot `slot` (the fire time it belongs to)."""
        ...
