"""Rows to domain objects and back, shared by the SQLite and PostgreSQL backends.

Both backends store the conversation and knowledge tables with the same columns and the same
JSON text; they differ only in how a time comes back (ISO text from SQLite, a datetime from
asyncpg) and in how their drivers are called. So each backend builds one `RowReader` with
its time decoder, and the mapping of columns to fields lives here once. Writing is the same
in reverse: a `RowWriter` with the backend's time encoder (and boolean form) turns domain
objects into parameter tuples in column order; each backend keeps only its SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from memory_core.domain.conversation import (
    CachedResult,
    Entry,
    EntryType,
    Exchange,
    PendingSummary,
    Role,
    SessionExport,
    SessionInfo,
    Summary,
    canonical_json,
)
from memory_core.domain.duplicates import normalised_hash
from memory_core.domain.hook_session import HookSession, TranscriptCursor
from memory_core.domain.knowledge import (
    Chunk,
    ChunkDraft,
    DocumentDraft,
    DocumentOrigin,
    DocumentRecord,
    Playbook,
    PlaybookDraft,
    Preference,
    PreferenceDraft,
    Snippet,
    SnippetDraft,
)
from memory_core.domain.models import Layer, Memory, StoreStats, Tier
from memory_core.domain.versions import MemoryVersion
from memory_core.errors import SchemaMismatchError
from memory_core.storage.counts_fold import FoldedCounts

if TYPE_CHECKING:
    import numpy as np

    from memory_core.ports.embeddings import Vector

__all__ = [
    "ChunkMatrix",
    "RowReader",
    "RowWriter",
    "identity_hash",
    "json_text",
    "next_number",
    "recorded_model",
    "store_stats",
    "vector_from_bytes",
    "vector_to_bytes",
]


def identity_hash(key: str | None, content: str) -> str | None:
    """The norm_hash column: an unkeyed row's normalised text hash (keyed rows go by key)."""
    return normalised_hash(content) if key is None else None


def store_stats(
    project: str,
    counts: FoldedCounts,
    database_bytes: int,
    oldest: datetime | None,
    newest: datetime | None,
    *,
    pinned: int = 0,
    superseded: int = 0,
) -> StoreStats:
    """A project's StoreStats from its folded counts; each backend decodes its own dates."""
    return StoreStats(
        project=project,
        total=counts.total,
        by_tier={Tier(t): n for t, n in counts.by_tier.items()},
        by_layer={Layer(layer): n for layer, n in counts.by_layer.items()},
        content_bytes=counts.content_bytes,
        database_bytes=database_bytes,
        oldest=oldest,
        newest=newest,
        stale_tiers=counts.stale_tiers,
        never_accessed=counts.never_accessed,
        pinned=pinned,
        superseded=superseded,
    )


def vector_to_bytes(vector: Vector | None) -> bytes | None:
    """A vector as little-endian float32 bytes (the same bytes on both backends)."""
    import numpy as np

    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def vector_from_bytes(blob: bytes | None) -> Vector | None:
    """Inverse of `vector_to_bytes`."""
    import numpy as np

    return None if blob is None else np.frombuffer(blob, dtype="<f4").astype(np.float32)


def json_text(value: JsonValue) -> str:
    """JSON as stored (key order kept), so a session exports the same text from either backend."""
    return json.dumps(value, ensure_ascii=False)


def model_recorded(meta: Mapping[str, str], model_id: str, dims: int) -> bool:
    """Whether the store's `meta` records an embedding model, which must be this one.

    Raises:
        SchemaMismatchError: Another model (or dimension count) indexed the store.
    """
    recorded = meta.get("embedding_model")
    if recorded is None:
        return False
    if recorded != model_id or meta.get("embedding_dims") != str(dims):
        raise SchemaMismatchError(
            f"this database was indexed with {recorded} "
            f"({meta.get('embedding_dims')} dims), not {model_id} ({dims} dims); run "
            f"`memstrata reindex` to re-embed it with the configured model, or set "
            f"MEMSTRATA_EMBEDDING_MODEL={recorded}"
        )
    return True


def recorded_model(meta_rows: Iterable[Sequence[Any]]) -> tuple[str, int] | None:
    """The (model id, dims) that the store's `meta` (key, value) rows record, if any."""
    meta = {str(key): str(value) for key, value in meta_rows}
    if "embedding_model" not in meta:
        return None
    return meta["embedding_model"], int(meta["embedding_dims"])


def next_number(ids: Iterable[int]) -> int:
    """The number after the highest of `ids` (1 when there are none)."""
    return max(ids, default=0) + 1


@dataclass(frozen=True)
class ChunkMatrix:
    """A tenant's chunk vectors of one model, as of one revision."""

    revision: int
    model_id: str
    ids: np.ndarray[Any, np.dtype[np.int64]]
    vectors: np.ndarray[Any, np.dtype[np.float32]]

    def nearest(self, vector: Vector, limit: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the `limit` nearest chunks, nearest first."""
        import numpy as np

        if len(self.ids) == 0:
            return []
        # Stored vectors are unit length (the Embedder contract), so a dot product is a cosine.
        scores = self.vectors @ np.asarray(vector, dtype=np.float32)
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self.ids[i]), float(scores[i])) for i in top]


# Enum members by stored value: a dict lookup is ~0.1 us a row against ~0.6 us for calling
# the enum, and a hybrid search decodes ~100 rows (see `RowReader.memory`).
_LAYERS = {layer.value: layer for layer in Layer}
_TIERS = {tier.value: tier for tier in Tier}


def _json_object(text: str) -> Any:
    """Decode stored JSON text; the empty object (most rows' metadata) without the parser."""
    # A new dict on every call: a shared one could be changed through one memory for all.
    return {} if text == "{}" else json.loads(text)


def _tags(value: Any) -> tuple[str, ...]:
    """Stored tags: JSON text (SQLite) or a decoded list (PostgreSQL's jsonb); mostly none."""
    if not value or value == "[]":
        return ()
    return tuple(json.loads(value) if isinstance(value, str) else value)


class RowReader:
    """Builds domain objects from rows (mappings by column name) of one backend.

    `time` decodes a stored instant; `metadata` decodes context_snapshots.metadata (JSON text
    in SQLite, already a dict from PostgreSQL's jsonb).
    """

    def __init__(
        self, time: Callable[[Any], datetime], metadata: Callable[[Any], Any] = _json_object
    ) -> None:
        self._time = time
        self._metadata = metadata

    def _opt_time(self, value: Any) -> datetime | None:
        return self._time(value) if value is not None else None

    def time_or_none(self, value: Any) -> datetime | None:
        """A stored instant, or None for NULL."""
        return self._opt_time(value)

    def export(
        self,
        session_row: Any,
        entries: Iterable[Any],
        summaries: Iterable[Any],
        exchanges: Iterable[Any],
        cache: Iterable[Any],
    ) -> SessionExport:
        """A whole session from its conversation_sessions row and the rows of its tables."""
        # The session's own fields (id, times, config, Q&A summary) come from its info.
        head = SessionExport.model_validate(self.session(session_row), from_attributes=True)
        return head.model_copy(
            update={
                "entries": [self.entry(r) for r in entries],
                "summaries": [self.summary(r) for r in summaries],
                "exchanges": [self.exchange(r) for r in exchanges],
                "cache": [self.cached(r) for r in cache],
            }
        )

    def memory(self, row: Any) -> Memory:
        """A context_snapshots row.

        Called for every candidate of a search (~100 rows at limit 10, most of them dropped
        by the ranking), so the enums and the usual empty metadata skip the slow paths; an
        unknown value still fails as calling the enum does.
        """
        layer = _LAYERS.get(row["layer"])
        tier = _TIERS.get(row["memory_tier"])
        return Memory(
            id=row["id"],
            project=row["project"],
            layer=layer if layer is not None else Layer(row["layer"]),
            key=row["key"],
            content=row["content"],
            metadata=self._metadata(row["metadata"]),
            session_id=row["session_id"],
            created_at=self._time(row["created_at"]),
            updated_at=self._time(row["updated_at"]),
            last_accessed=self._opt_time(row["last_accessed"]),
            access_count=row["access_count"],
            tier=tier if tier is not None else Tier(row["memory_tier"]),
            content_hash=row["content_hash"],
            token_count=row["token_count"],
            author=row["author"],
            occurred_at=self._opt_time(row["occurred_at"]),
            dates=row["dates"],
            pinned=bool(row["pinned"]),
            superseded_by=row["superseded_by"],
            tags=_tags(row["tags"]),
        )

    def version(self, row: Any) -> MemoryVersion:
        """A memory_versions row."""
        return MemoryVersion(
            id=row["id"],
            memory_id=row["memory_id"],
            key=row["key"],
            content=row["content"],
            metadata=self._metadata(row["metadata"]),
            tags=_tags(row["tags"]),
            valid_from=self._time(row["valid_from"]),
            valid_until=self._time(row["valid_until"]),
            change=row["change"],
        )

    def session(self, row: Any) -> SessionInfo:
        """A conversation_sessions row."""
        pending = json.loads(row["pending_summary"]) if row["pending_summary"] else None
        return SessionInfo(
            project=row["project"],
            session_id=row["session_id"],
            created_at=self._time(row["created_at"]),
            updated_at=self._time(row["updated_at"]),
            config=json.loads(row["config"]),
            qa_summary=row["qa_summary"],
            qa_summary_from=self._opt_time(row["qa_summary_from"]),
            qa_summary_until=self._opt_time(row["qa_summary_until"]),
            last_entry=row["next_entry"] - 1,
            pending=PendingSummary.model_validate(pending) if pending else None,
        )

    def entry(self, row: Any) -> Entry:
        """A conversation_entries row."""
        return Entry(
            id=row["entry_no"],
            type=EntryType(row["type"]),
            role=Role(row["role"]),
            content=row["content"],
            tool_name=row["tool_name"],
            arguments=json.loads(row["arguments"]) if row["arguments"] is not None else None,
            source=row["source"],
            is_error=bool(row["is_error"]),
            timestamp=self._time(row["created_at"]),
            token_count=row["token_count"],
            compressed=bool(row["compressed"]),
            summary_id=row["summary_no"],
        )

    def summary(self, row: Any) -> Summary:
        """A conversation_summaries row."""
        return Summary(
            id=row["summary_no"],
            text=row["text"],
            entry_ids=tuple(json.loads(row["entry_ids"])),
            token_count=row["token_count"],
            original_tokens=row["original_tokens"],
            ratio=row["ratio"],
            covers_from=self._time(row["covers_from"]),
            covers_until=self._time(row["covers_until"]),
            source=row["source"],
            created_at=self._time(row["created_at"]),
        )

    def exchange(self, row: Any) -> Exchange:
        """A conversation_exchanges row."""
        return Exchange(
            id=row["exchange_no"],
            question=row["question"],
            answer=row["answer"],
            answer_shortened=bool(row["answer_shortened"]),
            timestamp=self._time(row["created_at"]),
            folded=bool(row["folded"]),
        )

    def cached(self, row: Any) -> CachedResult:
        """A tool_result_cache row."""
        return CachedResult(
            key=row["cache_key"],
            tool_name=row["tool_name"],
            parameters=json.loads(row["parameters"]),
            result=json.loads(row["result"]),
            duration=row["duration"],
            remaining=row["remaining"],
            created_at=self._time(row["created_at"]),
        )

    def snippet(self, row: Any) -> Snippet:
        """A scratchpad_snippets row."""
        return Snippet(
            id=row["id"],
            session_id=row["session_id"],
            user=row["user_id"],
            tenant=row["tenant"],
            text=row["snippet"],
            norm_hash=row["norm_hash"],
            salient=bool(row["salient"]),
            promote_to=row["promote_to"],
            created_at=self._time(row["created_at"]),
            last_used_at=self._time(row["last_used_at"]),
            use_count=row["use_count"],
            promoted_to=row["promoted_to"],
            promoted_ref=row["promoted_ref"],
            promoted_reason=row["promoted_reason"],
        )

    def hook_session(self, row: Any) -> HookSession:
        """A hook_sessions row."""
        return HookSession(
            project=row["project"],
            session_id=row["session_id"],
            start_context=row["start_context"],
            start_tokens=int(row["start_tokens"]),
            injected=tuple(int(i) for i in json.loads(row["injected"])),
            cursor=TranscriptCursor(int(row["transcript_lines"]), row["transcript_uuid"]),
            summary_id=None if row["summary_id"] is None else int(row["summary_id"]),
            updated_at=self._time(row["updated_at"]),
            stop_offset=int(row["stop_offset"]),
            tool_rules=tuple(str(m) for m in json.loads(row["tool_rules"])),
        )

    def preference(self, row: Any) -> Preference:
        """A user_preferences row."""
        return Preference(
            id=row["id"],
            user=row["user_id"],
            key=row["key"],
            value=row["value"],
            flow_id=row["flow_id"],
            origin=row["origin"],
            created_at=self._time(row["created_at"]),
            updated_at=self._time(row["updated_at"]),
        )

    def playbook(self, row: Any) -> Playbook:
        """A playbooks row."""
        return Playbook(
            id=row["id"],
            user=row["user_id"],
            flow=row["flow"],
            user_query=row["user_query"],
            slots=json.loads(row["slots"]),
            tool_calls=json.loads(row["tool_calls"]),
            outcome=row["outcome"],
            created_at=self._time(row["created_at"]),
        )

    def document(self, row: Any) -> DocumentRecord:
        """A knowledge_documents row (with its body)."""
        return DocumentRecord(
            id=row["id"],
            tenant=row["tenant"],
            source=row["source"],
            origin=DocumentOrigin(row["origin"]),
            content_hash=row["content_hash"],
            chunk_count=row["chunk_count"],
            char_count=len(row["body"]),
            created_at=self._time(row["created_at"]),
            updated_at=self._time(row["updated_at"]),
        )

    @staticmethod
    def chunk(row: Any) -> Chunk:
        """A knowledge_chunks row joined with its document's source."""
        return Chunk(
            id=row["id"],
            tenant=row["tenant"],
            source=row["source"],
            position=row["position"],
            start=row["start_char"],
            end=row["end_char"],
            text=row["text"],
        )

    @staticmethod
    def vector(row: Any, model_id: str | None) -> Vector | None:
        """The row's stored vector, if it was made by `model_id`."""
        if not model_id or row["embed_model"] != model_id:
            return None
        return vector_from_bytes(row["embedding"])


class RowWriter:
    """Builds the parameter tuples of one backend's inserts from domain objects.

    `time` encodes an instant (ISO text for SQLite, an aware datetime for asyncpg); `flag`
    encodes a boolean (0/1 for SQLite's INTEGER columns, bool for PostgreSQL's boolean);
    `metadata` encodes context_snapshots.metadata (JSON text for SQLite, the dict itself for
    PostgreSQL's jsonb codec). Each tuple is in the column order its method's docstring names.
    """

    def __init__(
        self,
        time: Callable[[datetime], Any],
        flag: Callable[[bool], Any] = bool,
        metadata: Callable[[Any], Any] = json_text,
    ) -> None:
        self._time = time
        self._flag = flag
        self._metadata = metadata

    def memory(self, m: Memory) -> tuple[Any, ...]:
        """A context_snapshots row, id included.

        Columns: id, project, layer, key, content, metadata, session_id, created_at,
        updated_at, last_accessed, access_count, memory_tier, content_hash, token_count, author,
        occurred_at, dates, norm_hash, pinned, superseded_by, tags.
        """
        return (
            m.id,
            m.project,
            m.layer.value,
            m.key,
            m.content,
            self._metadata(m.metadata),
            m.session_id,
            self._time(m.created_at),
            self._time(m.updated_at),
            self._opt_time(m.last_accessed),
            m.access_count,
            m.tier.value,
            m.content_hash,
            m.token_count,
            m.author,
            self._opt_time(m.occurred_at),
            m.dates,
            identity_hash(m.key, m.content),
            self._flag(m.pinned),
            m.superseded_by,
            self._metadata(list(m.tags)),
        )

    def _opt_time(self, value: datetime | None) -> Any:
        return self._time(value) if value is not None else None

    def session(self, project: str, data: SessionExport) -> tuple[Any, ...]:
        """The conversation_sessions row of an imported session; numbering goes on after it.

        Columns: project, session_id, created_at, updated_at, config, qa_summary,
        qa_summary_from, qa_summary_until, next_entry, next_summary, next_exchange.
        """
        return (
            project,
            data.session_id,
            self._time(data.created_at),
            self._time(data.updated_at),
            canonical_json(data.config),
            data.qa_summary,
            self._opt_time(data.qa_summary_from),
            self._opt_time(data.qa_summary_until),
            next_number(e.id for e in data.entries),
            next_number(s.id for s in data.summaries),
            next_number(x.id for x in data.exchanges),
        )

    def session_rows(self, project: str, data: SessionExport) -> tuple[list[tuple[Any, ...]], ...]:
        """The rows of an imported session, in the order the import statements go in.

        Summaries first (entries point at them), then entries, exchanges and cached results.
        """
        sid = data.session_id
        return (
            [self.summary(project, sid, s) for s in data.summaries],
            [self.entry(project, sid, e) for e in data.entries],
            [self.exchange(project, sid, x) for x in data.exchanges],
            [self.cached(project, sid, c) for c in data.cache],
        )

    def summary(self, project: str, session_id: str, s: Summary) -> tuple[Any, ...]:
        """A conversation_summaries row.

        Columns: project, session_id, summary_no, text, entry_ids, token_count,
        original_tokens, ratio, covers_from, covers_until, source, created_at.
        """
        return (
            project,
            session_id,
            s.id,
            s.text,
            json.dumps(list(s.entry_ids)),
            s.token_count,
            s.original_tokens,
            s.ratio,
            self._time(s.covers_from),
            self._time(s.covers_until),
            s.source,
            self._time(s.created_at),
        )

    def entry(self, project: str, session_id: str, e: Entry) -> tuple[Any, ...]:
        """A conversation_entries row.

        Columns: project, session_id, entry_no, type, role, content, tool_name, arguments,
        source, is_error, created_at, token_count, compressed, summary_no.
        """
        return (
            project,
            session_id,
            e.id,
            e.type.value,
            e.role.value,
            e.content,
            e.tool_name,
            json_text(e.arguments) if e.arguments is not None else None,
            e.source,
            self._flag(e.is_error),
            self._time(e.timestamp),
            e.token_count,
            self._flag(e.compressed),
            e.summary_id,
        )

    def exchange(self, project: str, session_id: str, x: Exchange) -> tuple[Any, ...]:
        """A conversation_exchanges row.

        Columns: project, session_id, exchange_no, question, answer, answer_shortened,
        created_at, folded.
        """
        return (
            project,
            session_id,
            x.id,
            x.question,
            x.answer,
            self._flag(x.answer_shortened),
            self._time(x.timestamp),
            self._flag(x.folded),
        )

    def cached(self, project: str, session_id: str, c: CachedResult) -> tuple[Any, ...]:
        """A tool_result_cache row.

        Columns: project, session_id, cache_key, tool_name, parameters, result, duration,
        remaining, created_at.
        """
        return (
            project,
            session_id,
            c.key,
            c.tool_name,
            canonical_json(c.parameters),
            json_text(c.result),
            c.duration,
            c.remaining,
            self._time(c.created_at),
        )

    @staticmethod
    def embedding(vector: Vector | None, model_id: str | None) -> tuple[bytes | None, str | None]:
        """The embedding and embed_model columns: a model is recorded only with its vector."""
        return vector_to_bytes(vector), model_id if vector is not None else None

    def preference(
        self, draft: PreferenceDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Any, ...]:
        """A user_preferences row.

        Columns: user_id, key, value, flow_id, origin, embedding, embed_model, created_at,
        updated_at.
        """
        stamp = self._time(now)
        return (
            draft.user,
            draft.key,
            draft.value,
            draft.flow_id,
            draft.origin,
            *self.embedding(vector, model_id),
            stamp,
            stamp,
        )

    def playbook(
        self, draft: PlaybookDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Any, ...]:
        """A playbooks row.

        Columns: user_id, flow, user_query, slots, tool_calls, outcome, record_hash, embedding,
        embed_model, created_at.
        """
        return (
            draft.user,
            draft.flow,
            draft.user_query,
            json.dumps(draft.slots, ensure_ascii=False, sort_keys=True),
            json.dumps(draft.tool_calls, ensure_ascii=False),
            draft.outcome,
            draft.record_hash,
            *self.embedding(vector, model_id),
            self._time(now),
        )

    def snippet(
        self,
        draft: SnippetDraft,
        vector: Vector | None,
        model_id: str | None,
        now: datetime,
        use_seq: int,
    ) -> tuple[Any, ...]:
        """A new scratchpad_snippets row, used once.

        Columns: session_id, user_id, tenant, snippet, norm_hash, embedding, embed_model,
        salient, promote_to, created_at, last_used_at, use_seq, use_count.
        """
        stamp = self._time(now)
        return (
            draft.session_id,
            draft.user,
            draft.tenant,
            draft.text,
            draft.norm_hash,
            *self.embedding(vector, model_id),
            self._flag(draft.salient),
            draft.promote_to,
            stamp,
            stamp,
            use_seq,
            1,
        )

    def document(
        self, draft: DocumentDraft, created_at: datetime, updated_at: datetime
    ) -> tuple[Any, ...]:
        """A knowledge_documents row.

        Columns: tenant, source, origin, content_hash, body, chunk_count, created_at,
        updated_at.
        """
        return (
            draft.tenant,
            draft.source,
            draft.origin.value,
            draft.content_hash,
            draft.text,
            len(draft.chunks),
            self._time(created_at),
            self._time(updated_at),
        )

    def chunks(
        self,
        document_id: int,
        tenant: str,
        chunks: Sequence[ChunkDraft],
        vectors: Vector | None,
        model_id: str | None,
    ) -> list[tuple[Any, ...]]:
        """knowledge_chunks rows of one document, row i carrying vector i (if any).

        Columns: document_id, tenant, position, start_char, end_char, text, embedding,
        embed_model.
        """
        return [
            (
                document_id,
                tenant,
                c.position,
                c.start,
                c.end,
                c.text,
                vector_to_bytes(vectors[i]) if vectors is not None else None,
                model_id if vectors is not None else None,
            )
            for i, c in enumerate(chunks)
        ]
