"""The storage interfaces export, import, backup and copy-store depend on.

Every store moves as rows of tables whose columns are the export's record fields
(`TABLES`): the same names and value types on both backends, so a file written by one
imports into the other. A row is a dict of canonical Python values: str, int, float, bool,
an aware UTC datetime (`time`), bytes (`bytes`: embeddings, float32), a decoded JSON value
(`json`), or None.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memory_core.domain.models import Memory

__all__ = [
    "TABLES",
    "BackupReport",
    "ColumnType",
    "CopyEndpoint",
    "CopyRow",
    "ImportCounts",
    "MemoryTransfer",
    "Progress",
    "Row",
    "TableSpec",
    "table",
]

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

# (done, total): awaited after each unit of long work, so a caller can report it.
Progress = Callable[[int, int], Awaitable[None]]
Row = dict[str, Any]
ColumnType = Literal["text", "int", "float", "bool", "time", "bytes", "json"]


@dataclass(frozen=True)
class TableSpec:
    """One kind of exported record: its columns in file order, and how rows are keyed.

    Attributes:
        kind: The record's `kind` in the file.
        columns: (name, type) of every column exported, in order.
        key: Columns that order and page the rows (unique together).
        renumbered: The rows have a surrogate `id` the importing store may replace when
            another row holds it (children follow the new id).
        scoped: The rows carry a `project` (export/import `--project` selects them); the
            knowledge stores are keyed by user and tenant instead and have none.
    """

    kind: str
    columns: tuple[tuple[str, ColumnType], ...]
    key: tuple[str, ...]
    renumbered: bool = False
    scoped: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(name for name, _ in self.columns)


# The memory record: new columns go at the end (an older file simply lacks them).
_MEMORY = TableSpec(
    "memory",
    (
        ("id", "int"),
        ("project", "text"),
        ("layer", "text"),
        ("key", "text"),
        ("content", "text"),
        ("metadata", "json"),
        ("session_id", "text"),
        ("created_at", "time"),
        ("updated_at", "time"),
        ("last_accessed", "time"),
        ("access_count", "int"),
        ("memory_tier", "text"),
        ("content_hash", "text"),
        ("token_count", "int"),
        ("author", "text"),
        ("occurred_at", "time"),
        ("dates", "text"),
        # Since migration 0013. norm_hash is derived from the content (recomputed on import).
        ("norm_hash", "text"),
        ("pinned", "bool"),
        ("superseded_by", "int"),
        ("tags", "json"),
    ),
    key=("id",),
    renumbered=True,
    scoped=True,
)
# Earlier versions of memories (migration 0013); `memory_id` follows its memory's new id.
_MEMORY_VERSION = TableSpec(
    "memory_version",
    (
        ("id", "int"),
        ("memory_id", "int"),
        ("project", "text"),
        ("key", "text"),
        ("content", "text"),
        ("metadata", "json"),
        ("tags", "json"),
        ("content_hash", "text"),
        ("valid_from", "time"),
        ("valid_until", "time"),
        ("change", "text"),
    ),
    key=("id",),
    renumbered=True,
    scoped=True,
)
_SESSION_KEY = ("project", "session_id")

# Parents before children: an import writes the kinds in this order.
TABLES: tuple[TableSpec, ...] = (
    _MEMORY,
    _MEMORY_VERSION,
    TableSpec(
        "conversation_session",
        (
            ("project", "text"),
            ("session_id", "text"),
            ("created_at", "time"),
            ("updated_at", "time"),
            ("config", "text"),
            ("qa_summary", "text"),
            ("qa_summary_from", "time"),
            ("qa_summary_until", "time"),
            ("next_entry", "int"),
            ("next_summary", "int"),
            ("next_exchange", "int"),
            ("pending_summary", "text"),
        ),
        key=_SESSION_KEY,
        scoped=True,
    ),
    TableSpec(
        "conversation_summary",
        (
            ("project", "text"),
            ("session_id", "text"),
            ("summary_no", "int"),
            ("text", "text"),
            ("entry_ids", "text"),
            ("token_count", "int"),
            ("original_tokens", "int"),
            ("ratio", "float"),
            ("covers_from", "time"),
            ("covers_until", "time"),
            ("source", "text"),
            ("created_at", "time"),
        ),
        key=(*_SESSION_KEY, "summary_no"),
        scoped=True,
    ),
    TableSpec(
        "conversation_entry",
        (
            ("project", "text"),
            ("session_id", "text"),
            ("entry_no", "int"),
            ("type", "text"),
            ("role", "text"),
            ("content", "text"),
            ("tool_name", "text"),
            ("arguments", "text"),
            ("source", "text"),
            ("is_error", "bool"),
            ("created_at", "time"),
            ("token_count", "int"),
            ("compressed", "bool"),
            ("summary_no", "int"),
        ),
        key=(*_SESSION_KEY, "entry_no"),
        scoped=True,
    ),
    TableSpec(
        "conversation_exchange",
        (
            ("project", "text"),
            ("session_id", "text"),
            ("exchange_no", "int"),
            ("question", "text"),
            ("answer", "text"),
            ("answer_shortened", "bool"),
            ("created_at", "time"),
            ("folded", "bool"),
        ),
        key=(*_SESSION_KEY, "exchange_no"),
        scoped=True,
    ),
    TableSpec(
        "tool_result",
        (
            ("project", "text"),
            ("session_id", "text"),
            ("cache_key", "text"),
            ("tool_name", "text"),
            ("parameters", "text"),
            ("result", "text"),
            ("duration", "int"),
            ("remaining", "int"),
            ("created_at", "time"),
        ),
        key=(*_SESSION_KEY, "cache_key"),
        scoped=True,
    ),
    TableSpec(
        "scratchpad_snippet",
        (
            ("id", "int"),
            ("session_id", "text"),
            ("user_id", "text"),
            ("tenant", "text"),
            ("snippet", "text"),
            ("norm_hash", "text"),
            ("embedding", "bytes"),
            ("embed_model", "text"),
            ("salient", "bool"),
            ("promote_to", "text"),
            ("created_at", "time"),
            ("last_used_at", "time"),
            ("use_seq", "int"),
            ("use_count", "int"),
            ("promoted_to", "text"),
            ("promoted_ref", "text"),
            ("promoted_reason", "text"),
            ("promoted_at", "time"),
        ),
        key=("id",),
        renumbered=True,
    ),
    TableSpec(
        "preference",
        (
            ("id", "int"),
            ("user_id", "text"),
            ("key", "text"),
            ("value", "text"),
            ("flow_id", "text"),
            ("origin", "text"),
            ("embedding", "bytes"),
            ("embed_model", "text"),
            ("created_at", "time"),
            ("updated_at", "time"),
        ),
        key=("id",),
        renumbered=True,
    ),
    TableSpec(
        "playbook",
        (
            ("id", "int"),
            ("user_id", "text"),
            ("flow", "text"),
            ("user_query", "text"),
            ("slots", "text"),
            ("tool_calls", "text"),
            ("outcome", "text"),
            ("record_hash", "text"),
            ("embedding", "bytes"),
            ("embed_model", "text"),
            ("created_at", "time"),
        ),
        key=("id",),
        renumbered=True,
    ),
    TableSpec(
        "document",
        (
            ("id", "int"),
            ("tenant", "text"),
            ("source", "text"),
            ("origin", "text"),
            ("content_hash", "text"),
            ("body", "text"),
            ("chunk_count", "int"),
            ("created_at", "time"),
            ("updated_at", "time"),
        ),
        key=("id",),
        renumbered=True,
    ),
    TableSpec(
        "document_chunk",
        (
            ("id", "int"),
            ("document_id", "int"),
            ("tenant", "text"),
            ("position", "int"),
            ("start_char", "int"),
            ("end_char", "int"),
            ("text", "text"),
            ("embedding", "bytes"),
            ("embed_model", "text"),
        ),
        key=("id",),
        renumbered=True,
    ),
    TableSpec("document_revision", (("tenant", "text"), ("revision", "int")), key=("tenant",)),
)
_BY_KIND = {spec.kind: spec for spec in TABLES}


def table(kind: str) -> TableSpec:
    """The spec of a record kind (KeyError for an unknown kind)."""
    return _BY_KIND[kind]


class ImportCounts(BaseModel):
    """What an import did with each record it was given (memories; `stores`: every kind)."""

    model_config = ConfigDict(frozen=True)

    imported: int = 0
    skipped: int = 0  # an identical memory (same identity) was already stored
    renumbered: int = 0  # imported under a new id because the original id was taken
    redacted: dict[str, int] = Field(default_factory=dict)  # credentials taken out, by kind
    # Per record kind (memory included): {"imported": n, "skipped": n, "renumbered": n}.
    stores: dict[str, dict[str, int]] = {}


class BackupReport(BaseModel):
    """A verified copy of the store."""

    model_config = ConfigDict(frozen=True)

    path: Path
    bytes: int
    integrity: str  # "ok" when the copy passed the integrity check


class MemoryTransfer(Protocol):
    """Whole rows of every store in and out, every column included (access fields too)."""

    async def schema_version(self) -> int:
        """The store's schema version (number of the newest applied migration)."""
        ...

    async def count_rows(self, kind: str, project: str | None) -> int:
        """How many rows of a kind a project (or, with None, the whole store) holds.

        For kinds without a project, `project` is ignored.
        """
        ...

    async def export_rows(
        self, kind: str, project: str | None, *, after: tuple[Any, ...] | None, limit: int
    ) -> list[Row]:
        """Up to `limit` rows of a kind whose key is above `after`, in key order, untouched."""
        ...

    async def insert_rows(self, kind: str, rows: Sequence[Row], *, keep_ids: bool) -> list[Any]:
        """Insert rows in one transaction; per row, its id (or True) if written, else None.

        A row is not written (None) when it conflicts with a stored row: its id (only with
        `keep_ids`) or its identity (the table's unique key). Without `keep_ids` the store
        gives each row a new id above every stored one. A document revision is never
        refused: it is raised above both the stored and the imported value.
        """
        ...

    async def finish_import(self) -> None:
        """After rows were written with their ids: new ids must continue above them."""
        ...

    async def memory_ids(self, rows: Sequence[Row]) -> list[int | None]:
        """Per memory row, the id of the stored memory holding its identity, or None.

        The identity the store's uniqueness rules use: a key in its project and layer, else
        the text's hash (or normalised hash) in its project, layer and working session.
        """
        ...

    async def relink_superseded(self, links: Sequence[tuple[int, int | None]]) -> None:
        """Set `superseded_by` of each stored memory (id, superseded by id or None)."""
        ...

    async def backup(self, target: Path, *, progress: Progress | None = None) -> BackupReport:
        """Copy the live store to `target` (replacing it) and verify the copy's integrity."""
        ...


# A row, and its embedding with the hash of the text embedded, when it has one.
CopyRow = tuple[Memory, str | None, "Vector | None"]


class CopyEndpoint(Protocol):
    """One store as a copy source or target (a storage backend implements it)."""

    async def model(self) -> tuple[str, int] | None:
        """The embedding model recorded in the store (id, dims), if any."""
        ...

    async def counts(self) -> tuple[int, int]:
        """(memories, embeddings) in the whole store."""
        ...

    async def read(self, after_id: int, limit: int) -> list[CopyRow]:
        """Up to `limit` rows with ids above `after_id`, in id order, with their vectors."""
        ...

    async def prepare(self, model: tuple[str, int] | None) -> None:
        """Get an empty target ready (record the model, size the vector index)."""
        ...

    async def write(self, rows: Sequence[CopyRow]) -> None:
        """Insert rows keeping their ids, and their vectors, in one transaction."""
        ...

    async def finish(self) -> None:
        """After the last batch: make new ids continue above the copied ones."""
        ...
