"""The storage interfaces of the scratchpad, preferences, playbooks and business context.

Vectors are stored with the id of the model that made them; a backend returns vector matches
only among rows embedded by the model it is asked about. Ranking, thresholds and validation
live in services and the domain, so a PostgreSQL backend is a second class, not a rewrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memory_core.domain.knowledge import (
    Chunk,
    DocumentDraft,
    DocumentOrigin,
    DocumentRecord,
    Playbook,
    PlaybookDraft,
    Preference,
    PreferenceDraft,
    PromotionReason,
    PromotionTarget,
    Snippet,
    SnippetDraft,
)
from memory_core.domain.pattern_pool import PooledPattern, PoolPassage

__all__ = [
    "DocumentStore",
    "DocumentWrite",
    "PendingDocument",
    "PlaybookStore",
    "PreferenceStore",
    "ScratchpadStore",
    "SharedPattern",
    "SharedPatternStore",
    "SharingStatus",
    "SnippetWrite",
]

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector


@dataclass(frozen=True)
class SnippetWrite:
    """What writing a snippet did."""

    snippet: Snippet
    created: bool  # False: the session already held this text; it was refreshed instead
    evicted: list[Snippet]


class ScratchpadStore(Protocol):
    """Snippets per session, capped, least recently used evicted first."""

    async def write(
        self,
        draft: SnippetDraft,
        vector: Vector | None,
        model_id: str | None,
        now: datetime,
        *,
        cap: int,
    ) -> SnippetWrite:
        """Add a snippet (or refresh the same text in its session) and evict beyond `cap`.

        In one transaction: the written snippet becomes the most recently used, and the least
        recently used snippets of the session are deleted until at most `cap` remain.
        """
        ...

    async def read(
        self, session_id: str, ids: Sequence[int] | None, now: datetime
    ) -> list[Snippet]:
        """Snippets of a session (all, or these ids), most recently used first, marked as used.

        Marking keeps their relative order, so reading everything changes no eviction order;
        reading some makes exactly those the most recently used.
        """
        ...

    async def get(self, session_id: str, snippet_id: int) -> Snippet | None:
        """One snippet, without marking it used."""
        ...

    async def peers(
        self, user: str | None, tenant: str | None, model_id: str | None
    ) -> list[tuple[Snippet, Vector | None]]:
        """Every snippet of this user (else of this tenant), with its vector by `model_id`."""
        ...

    async def mark_promoted(
        self,
        ids: Sequence[int],
        target: PromotionTarget,
        ref: str,
        reason: PromotionReason,
        now: datetime,
    ) -> None:
        """Record where snippets went (the latest promotion of a snippet wins)."""
        ...

    async def delete(
        self, *, session_id: str | None, user: str | None, ids: Sequence[int] | None
    ) -> list[int]:
        """Delete snippets of a session (these `ids`, or all), or every snippet of a user.

        Exactly one of `session_id` and `user` is given. Returns the deleted ids, ascending.
        """
        ...


class PreferenceStore(Protocol):
    """Rules per user, unique by key."""

    async def upsert(
        self, draft: PreferenceDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Preference, str | None]:
        """Insert or replace the rule under (user, key); returns it and the previous value."""
        ...

    async def get(self, user: str, key: str) -> Preference | None:
        """The rule under this key."""
        ...

    async def list_user(
        self, user: str, model_id: str | None
    ) -> list[tuple[Preference, Vector | None]]:
        """Every rule of a user, with its vector by `model_id` (None when it has none)."""
        ...

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of rules that were written without one."""
        ...

    async def delete(self, user: str, keys: Sequence[str] | None) -> list[str]:
        """Delete rules of a user (these keys, or all); returns the deleted keys."""
        ...


class PlaybookStore(Protocol):
    """Recorded trajectories per user."""

    async def add(
        self, draft: PlaybookDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Playbook, bool]:
        """Record a trajectory; the same one recorded again returns the stored row (False)."""
        ...

    async def list_user(
        self, user: str, flow: str | None, model_id: str | None
    ) -> list[tuple[Playbook, Vector | None]]:
        """Playbooks of a user (optionally of one flow), with vectors by `model_id`."""
        ...

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of playbooks recorded without one."""
        ...

    async def delete(self, user: str, ids: Sequence[int] | None) -> list[int]:
        """Delete playbooks of a user (these ids, or all); returns the deleted ids, ascending."""
        ...


@dataclass(frozen=True)
class DocumentWrite:
    """What storing a document did: 'created', 'replaced' or 'unchanged'."""

    document: DocumentRecord
    status: str


class DocumentStore(Protocol):
    """Business documents per tenant, as chunks with text and vectors."""

    @property
    def shared(self) -> SharedPatternStore:
        """The shared-pattern pool on the same database (patterns come from documents)."""
        ...

    async def get_document(self, tenant: str, source: str) -> DocumentRecord | None:
        """The stored document of a source."""
        ...

    async def embedded_chunks(self, document_id: int, model_id: str) -> int:
        """How many chunks of a document hold a vector of `model_id`."""
        ...

    async def put_document(
        self, draft: DocumentDraft, vectors: Vector | None, model_id: str | None, now: datetime
    ) -> DocumentWrite:
        """Store a document and its chunks, replacing an older version, in one transaction.

        `vectors` row i belongs to chunk i. A source whose stored hash equals the draft's
        `content_hash` is left alone ('unchanged').
        """
        ...

    async def keyword_candidates(self, tenant: str, fts: str, *, limit: int) -> list[int]:
        """Chunk ids of a tenant matching an FTS5 expression, best BM25 first."""
        ...

    async def vector_candidates(
        self, tenant: str, vector: Vector, model_id: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of a tenant's nearest chunks, nearest first."""
        ...

    async def chunks(self, tenant: str, ids: Sequence[int]) -> list[Chunk]:
        """Chunks of a tenant by id, in the order of `ids` (unknown ids are left out)."""
        ...

    async def documents(
        self, tenant: str, origins: Sequence[DocumentOrigin] | None
    ) -> list[tuple[DocumentRecord, str]]:
        """Documents of a tenant (of these origins) with their text, oldest first."""
        ...

    async def delete_documents(self, tenant: str, sources: Sequence[str] | None) -> list[str]:
        """Delete documents of a tenant (these sources, or all) with their chunks.

        One transaction, which also moves the tenant's revision so every process reloads
        its vectors. Returns the deleted sources.
        """
        ...


@dataclass(frozen=True)
class PendingDocument:
    """A document of an opted-in tenant whose sentences are not in the pool (for this model)."""

    id: int
    tenant: str
    body: str


@dataclass(frozen=True)
class SharedPattern:
    """A published pattern: anonymised text and its vector; never who holds it."""

    id: int
    text: str
    vector: Vector | None


@dataclass(frozen=True)
class SharingStatus:
    """Whether a tenant shares patterns, and how much of it is in the pool."""

    tenant: str
    opted_in_at: datetime | None
    passages: int  # anonymised sentences of the tenant in the pool
    documents: int  # its documents already read into the pool


class SharedPatternStore(Protocol):
    """The pool of anonymised sentences of opted-in tenants and the patterns published from it.

    The one place that reads across tenants. It holds nothing of a tenant that has not
    opted in: passages are only added for a tenant in the opt-in table (checked in the same
    transaction), and opting out deletes the tenant's passages, the patterns it is the
    source of and its holder rows in one transaction. A published pattern is returned only
    while at least `min_tenants` distinct opted-in tenants hold it and it has lost none of the
    holders it was published with (a document deleted or replaced withdraws it at once).
    """

    async def opt_in(self, tenant: str, now: datetime) -> bool:
        """Add the tenant to the contributors; False when it already was one."""
        ...

    async def opt_out(self, tenant: str) -> tuple[int, int]:
        """Remove the tenant and all it contributed; returns (passages, patterns) deleted."""
        ...

    async def status(self, tenant: str) -> SharingStatus:
        """The tenant's opt-in time (None: not sharing) and its share of the pool."""
        ...

    async def pending_documents(self, model_id: str, *, limit: int) -> list[PendingDocument]:
        """Documents of opted-in tenants not yet read with this model, oldest first."""
        ...

    async def passage_count(self, tenant: str) -> int:
        """How many passages of the tenant are in the pool."""
        ...

    async def add_passages(
        self,
        document: PendingDocument,
        texts: Sequence[str],
        vectors: Vector | None,
        model_id: str,
        now: datetime,
    ) -> bool:
        """Replace the document's passages with these and mark it read, in one transaction.

        Nothing is written (False) when the tenant is no longer opted in or the document is
        gone or changed since it was read (its row id is not the current one).
        """
        ...

    async def passages(self, model_id: str) -> list[tuple[PoolPassage, Vector]]:
        """Every passage in the pool embedded by `model_id`, with its unit vector."""
        ...

    async def replace_patterns(self, patterns: Sequence[PooledPattern], now: datetime) -> int:
        """Publish these patterns in place of all earlier ones, in one transaction.

        A pattern whose source passage has left the pool meanwhile is skipped, and only the
        holder passages still in the pool are recorded. Returns how many were stored.
        """
        ...

    async def patterns(self, min_tenants: int, model_id: str | None) -> list[SharedPattern]:
        """Published patterns still satisfying the k-tenant rule, vectors by `model_id`."""
        ...
