"""Export and import every store as JSON lines, and back the store up (the CLI's use cases).

The export format, version 2: a header line
`{"format": "memstrata-export", "format_version": 2, "schema_version": N, "exported_at": ...,
"project": null | "name"}`, then one line per record, each an object whose `kind` names what
it holds (memory_core.ports.transfer.TABLES, in that order): `memory` (every column of the
row, tier and access fields included: `last_accessed`, `access_count`, `memory_tier`, ...),
then the conversations (`conversation_session`, `conversation_summary`,
`conversation_entry`, `conversation_exchange`, `tool_result`), the scratchpad
(`scratchpad_snippet`), `preference`, `playbook`, and business documents (`document`,
`document_chunk`, `document_revision`). Embeddings of the knowledge stores travel with
their rows (base64 float32, with the model that made them). Memory embeddings do not: they
belong to a model, and the store embeds imported memories on its own (the server's backfill,
or `memstrata reindex`); `copy-store` moves them. Version 1 files (memories only, without
`kind`) still import.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.config.policies import ConversationPolicy, Limits
from memory_core.domain.dates import dates_of, normalise_dates
from memory_core.domain.duplicates import normalised_hash as normalised_text_hash
from memory_core.domain.inputs import (
    MAX_IMPORTED_ID,
    check_author,
    check_metadata,
    check_project,
    check_session,
    check_text,
    content_hash,
)
from memory_core.domain.knowledge import playbook_hash
from memory_core.domain.memory_redaction import redact_memory
from memory_core.domain.models import Layer, Memory, Tier
from memory_core.domain.redaction import RedactionPolicy, Redactor
from memory_core.domain.similarity import normalised_hash
from memory_core.domain.tags import check_tags
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock
from memory_core.ports.transfer import (
    TABLES,
    ImportCounts,
    MemoryTransfer,
    Progress,
    Row,
    TableSpec,
    table,
)
from memory_core.services.transfer_records import RecordLimits, check_time, encode_row, parse_row

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "IMPORT_BATCH",
    "ExportHeader",
    "ParsedExport",
    "export_lines",
    "import_records",
    "memory_row",
    "parse_export",
]

log = structlog.get_logger(__name__)

FORMAT = "memstrata-export"
FORMAT_VERSION = 2
# Versions this memstrata reads: 1 held memories only, with no `kind` on its lines.
_READABLE_VERSIONS = (1, 2)
_PAGE = 500
# Rows written per transaction by an import (docs/reliability.md, "Long imports"): measured
# with bench/import_lock.py on a loaded 2-core machine, a batch held SQLite's write lock 0.44 s
# at the median and a live server's append waited 2.1 s at worst (27 s, and one failed
# append, with the whole file in one transaction), for a quarter more import time.
IMPORT_BATCH = 1_000


class ExportHeader(BaseModel):
    """The first line of an export."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    format: Literal["memstrata-export"]
    format_version: int
    schema_version: int
    exported_at: datetime
    project: str | None = None


class _Record(BaseModel):
    """One exported row, by column name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    project: str
    layer: Layer
    key: str | None
    content: str
    metadata: dict[str, JsonValue]
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime | None
    access_count: int
    memory_tier: Tier
    content_hash: str
    token_count: int
    # Since migration 0008; absent from the line when unset, so older files read the same.
    author: str | None = None
    # Since migration 0010, likewise. A record without `dates` (an older file) gets them
    # resolved from its content on import, so a store upgraded by export and import has them.
    occurred_at: datetime | None = None
    dates: str | None = None
    # Since migration 0013, likewise (absent: not pinned, current, untagged).
    pinned: bool = False
    superseded_by: int | None = None
    tags: tuple[str, ...] = ()
    # Derived from the content (memory_row computes it); never read from a file.
    norm_hash: str | None = None

    @classmethod
    def of(cls, m: Memory) -> _Record:
        return cls(
            id=m.id,
            project=m.project,
            layer=m.layer,
            key=m.key,
            content=m.content,
            metadata=m.metadata,
            session_id=m.session_id,
            created_at=m.created_at,
            updated_at=m.updated_at,
            last_accessed=m.last_accessed,
            access_count=m.access_count,
            memory_tier=m.tier,
            content_hash=m.content_hash,
            token_count=m.token_count,
            author=m.author,
            occurred_at=m.occurred_at,
            dates=m.dates,
            pinned=m.pinned,
            superseded_by=m.superseded_by,
            tags=m.tags,
        )

    def to_memory(self) -> Memory:
        # The hash is the identity of unkeyed rows, so it is derived, never trusted: an export
        # edited by hand (a typo fixed) still imports with a correct identity.
        return Memory(
            id=self.id,
            project=self.project,
            layer=self.layer,
            key=self.key,
            content=self.content,
            metadata=self.metadata,
            session_id=self.session_id,
            created_at=self.created_at,
            updated_at=self.updated_at,
            last_accessed=self.last_accessed,
            access_count=self.access_count,
            tier=self.memory_tier,
            content_hash=content_hash(self.content),
            token_count=self.token_count,
            author=self.author,
            occurred_at=self.occurred_at,
            dates=normalise_dates(self.dates)
            if self.dates is not None
            else dates_of(self.content, self.occurred_at or self.created_at),
            pinned=self.pinned,
            superseded_by=self.superseded_by,
            tags=check_tags(self.tags),
        )


def memory_row(memory: Memory) -> Row:
    """A memory as its context_snapshots row (the record's fields, enums as their values).

    `norm_hash`, the identity of unkeyed text, is derived here like content_hash, never read
    from a file.
    """
    row = {
        name: value.value if isinstance(value, StrEnum) else value
        for name, value in _Record.of(memory).model_dump().items()
    }
    row["tags"] = list(memory.tags)
    row["norm_hash"] = normalised_text_hash(memory.content) if memory.key is None else None
    return row


def _memory_line(row: Row) -> str:
    # A memory without an author, dates, pin, supersession or tags is written as before those
    # existed.
    memory = _Record.model_validate(row)
    unset = {f for f in ("author", "occurred_at", "dates") if getattr(memory, f) is None}
    unset |= {f for f in ("pinned", "superseded_by", "tags") if not getattr(memory, f)}
    unset.add("norm_hash")
    record = memory.model_dump(mode="json", exclude=unset or None)
    return json.dumps({"kind": "memory", **record}, ensure_ascii=False, separators=(",", ":"))


def _line(spec: TableSpec, row: Row) -> str:
    if spec.kind == "memory":
        return _memory_line(row)
    return json.dumps(encode_row(spec, row), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ParsedExport:
    """A validated export file: its header and its records (kind, row), in file order."""

    header: ExportHeader
    records: list[tuple[str, Row]]

    @property
    def memories(self) -> list[Memory]:
        """The memory records, as memories."""
        return [
            _Record.model_validate(row).to_memory()
            for kind, row in self.records
            if kind == "memory"
        ]

    def kinds(self) -> dict[str, int]:
        """How many records of each kind the file holds."""
        counts: dict[str, int] = {}
        for kind, _ in self.records:
            counts[kind] = counts.get(kind, 0) + 1
        return counts


async def export_lines(
    transfer: MemoryTransfer,
    clock: Clock,
    project: str | None = None,
    *,
    progress: Progress | None = None,
    counts: dict[str, int] | None = None,
) -> AsyncIterator[str]:
    """The export, line by line (no trailing newlines): the header, then every store's rows.

    Kinds come in `TABLES` order (parents before children), each in key order. Pages are
    read one at a time, so a large store is never held in memory; rows written while the
    export runs may or may not be included. With `project`, only the stores that belong to
    projects are exported (memories and conversations); the knowledge stores belong to users
    and tenants and are left out.

    Args:
        transfer: The store.
        clock: Stamps the header.
        project: Export one project only.
        progress: Awaited with (rows written, rows in total) after each page.
        counts: Filled with the number of rows written per kind.
    """
    if project is not None:
        check_project(project)
    specs = [s for s in TABLES if project is None or s.scoped]
    total = sum([await transfer.count_rows(s.kind, project) for s in specs])
    header = ExportHeader(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        schema_version=await transfer.schema_version(),
        exported_at=clock.now(),
        project=project,
    )
    yield header.model_dump_json()
    done = 0
    for spec in specs:
        after: tuple[Any, ...] | None = None
        written = 0
        while page := await transfer.export_rows(spec.kind, project, after=after, limit=_PAGE):
            for row in page:
                yield _line(spec, row)
            written += len(page)
            after = tuple(page[-1][k] for k in spec.key)
            if progress is not None:
                await progress(done + written, max(total, done + written))
        done += written
        if counts is not None:
            counts[spec.kind] = written
    log.info("stores.exported", project=project or "*", count=done)


def _line_error(number: int, reason: str) -> InvalidInputError:
    return InvalidInputError(f"line {number}", reason)


# The largest counter (an `integer` column).
_MAX_COUNTER = 2**31 - 1
# Errors listed per failed import before "and N more".
_ERRORS_SHOWN = 20
_SESSION_CHILDREN = frozenset(
    {"conversation_summary", "conversation_entry", "conversation_exchange", "tool_result"}
)


def _check_numbers(record: _Record) -> None:
    """Ids and counters within the columns that hold them (no driver overflows on write)."""
    if not 1 <= record.id <= MAX_IMPORTED_ID:
        raise InvalidInputError("id", f"must be an integer from 1 to {MAX_IMPORTED_ID}")
    for name in ("access_count", "token_count"):
        # 32-bit `integer` columns in PostgreSQL; SQLite's own overflow is past 2^63.
        if not 0 <= getattr(record, name) <= _MAX_COUNTER:
            raise InvalidInputError(name, f"must be a whole number from 0 to {_MAX_COUNTER}")
    if record.superseded_by is not None and not 1 <= record.superseded_by <= MAX_IMPORTED_ID:
        raise InvalidInputError("superseded_by", f"must be an id from 1 to {MAX_IMPORTED_ID}")


def _parse_record(number: int, data: Any, now: datetime, limits: Limits) -> Memory:
    """One memory record, through the limits the tools apply to the same fields.

    An export file is no more trusted than a tool call: it may have been edited, or come
    from elsewhere. A store moved into one with smaller limits needs them raised first
    (MEMSTRATA_LIMITS__*), and the error says which field is over.
    """
    try:
        record = _Record.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record"
        raise _line_error(number, f"{where}: {first['msg']}") from exc
    try:
        check_project(record.project)
        check_text("content", record.content, max_chars=limits.max_content_chars)
        if record.key is not None:
            check_text("key", record.key, max_chars=limits.max_key_chars)
        elif record.layer in (Layer.SEMANTIC, Layer.PROCEDURAL):
            raise InvalidInputError("key", f"is required in the {record.layer.value} layer")
        check_session(record.session_id)
        if record.author is not None and check_author(record.author) != record.author:
            raise InvalidInputError("author", "must be one trimmed line of at most 100 characters")
        check_metadata(record.metadata, limits)
        _check_numbers(record)
        for name in ("created_at", "updated_at", "last_accessed", "occurred_at"):
            check_time(name, getattr(record, name), now)
        # Tags and dates are checked as they become the memory's.
        return record.to_memory()
    except InvalidInputError as exc:
        raise _line_error(number, f"{exc.field}: {exc.reason}") from exc


class _Links:
    """What earlier lines of a file defined, so a child line can name its parent."""

    def __init__(self) -> None:
        self.sessions: set[tuple[str, str]] = set()
        self.documents: dict[int, str] = {}  # id -> tenant

    def check(self, kind: str, row: Row) -> None:
        if kind == "conversation_session":
            self.sessions.add((row["project"], row["session_id"]))
        elif kind in _SESSION_CHILDREN:
            if (row["project"], row["session_id"]) not in self.sessions:
                raise InvalidInputError(
                    "session_id", "names no conversation_session on an earlier line"
                )
        elif kind == "document":
            self.documents[row["id"]] = row["tenant"]
        elif kind == "document_chunk":
            tenant = self.documents.get(row["document_id"])
            if tenant is None:
                raise InvalidInputError("document_id", "names no document on an earlier line")
            if tenant != row["tenant"]:
                raise InvalidInputError("tenant", "differs from its document's tenant")


def _validated(
    number: int,
    data: Any,
    *,
    version: int,
    now: datetime,
    bounds: RecordLimits,
    links: _Links,
) -> tuple[str, Row]:
    """The one gate every imported record passes: typed, within the tools' limits, linked.

    Returns the record's kind and its row as the storage writes it.
    """
    if not isinstance(data, dict):
        raise _line_error(number, "must be a JSON object (a record)")
    kind = data.get("kind", "memory" if version == 1 else None)
    try:
        spec = table(kind) if isinstance(kind, str) else None
    except KeyError:
        spec = None
    if spec is None:
        kinds = ", ".join(s.kind for s in TABLES)
        raise _line_error(number, f"kind: must be one of {kinds}")
    if spec.kind == "memory":
        fields = {k: v for k, v in data.items() if k != "kind"}
        return "memory", memory_row(_parse_record(number, fields, now, bounds.limits))
    try:
        row = parse_row(spec, data, now, bounds)
        links.check(spec.kind, row)
    except InvalidInputError as exc:
        raise _line_error(number, f"{exc.field}: {exc.reason}") from exc
    return spec.kind, row


def parse_export(
    lines: Iterable[str],
    *,
    schema_version: int,
    now: datetime | None = None,
    limits: Limits | None = None,
    conversation: ConversationPolicy | None = None,
    knowledge: KnowledgePolicy | None = None,
) -> ParsedExport:
    """Validate a whole export before anything is written.

    Every line is checked, so one attempt lists every bad line (the first 20), each by its
    number and field, through the limits the tools apply.

    Args:
        lines: The file's lines; blank lines are ignored.
        schema_version: The importing store's schema version; a newer export is refused.
        now: The time imported times may not lie beyond (by more than a day).
        limits: The store's limits (the tools' own); the defaults when not given.
        conversation: The conversation policy (its `max_entry_chars` bounds entries).
        knowledge: The knowledge policy (snippet, value and document lengths).

    Raises:
        InvalidInputError: `field` names the line ("line 3", or "file" for several) and
            `reason` what is wrong.
    """
    now = now or datetime.now(UTC)
    bounds = RecordLimits(
        limits=limits or Limits(),
        conversation=conversation or ConversationPolicy(),
        knowledge=knowledge or KnowledgePolicy(),
    )
    header: ExportHeader | None = None
    records: list[tuple[str, Row]] = []
    errors: list[InvalidInputError] = []
    links = _Links()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            try:
                data = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
                raise _line_error(number, f"is not JSON ({reason})") from exc
            if header is None:
                header = _parse_header(number, data, schema_version)
            else:
                records.append(
                    _validated(
                        number,
                        data,
                        version=header.format_version,
                        now=now,
                        bounds=bounds,
                        links=links,
                    )
                )
        except InvalidInputError as exc:
            if header is None:
                raise  # without a valid header, nothing after it can be read
            errors.append(exc)
    if header is None:
        raise InvalidInputError("file", f"is empty; expected a {FORMAT} header line")
    if len(errors) == 1:
        raise errors[0]
    if errors:
        shown = "; ".join(str(e) for e in errors[:_ERRORS_SHOWN])
        more = len(errors) - _ERRORS_SHOWN
        tail = f"; and {more} more" if more > 0 else ""
        raise InvalidInputError("file", f"{len(errors)} bad lines, nothing imported: {shown}{tail}")
    return ParsedExport(header=header, records=records)


def _parse_header(number: int, data: Any, schema_version: int) -> ExportHeader:
    try:
        header = ExportHeader.model_validate(data)
    except ValidationError as exc:
        raise _line_error(
            number, f"must be the {FORMAT} header (format, format_version, schema_version, ...)"
        ) from exc
    if header.format_version not in _READABLE_VERSIONS:
        raise _line_error(
            number,
            f"format_version {header.format_version} is not supported (this memstrata reads "
            f"{', '.join(str(v) for v in _READABLE_VERSIONS)})",
        )
    if header.schema_version > schema_version:
        raise _line_error(
            number,
            f"the export comes from schema version {header.schema_version}, newer than this "
            f"store's {schema_version}; upgrade memstrata first",
        )
    return header


class _Tally:
    """Per-kind outcome counts, and progress over the whole import."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.kinds: dict[str, dict[str, int]] = {}

    def add(self, kind: str, outcome: str, n: int = 1) -> None:
        counts = self.kinds.setdefault(kind, {"imported": 0, "skipped": 0, "renumbered": 0})
        counts[outcome] += n

    async def advance(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            await self.progress(min(self.done, self.total), self.total)


def _batches(rows: list[Row], size: int) -> Iterable[list[Row]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


async def _write_kind(
    transfer: MemoryTransfer, spec: TableSpec, rows: list[Row], batch: int, tally: _Tally
) -> dict[Any, Any]:
    """Write one kind's rows in batches; returns {original id (or key): new id, or None}.

    First every row that can keep its id; only then do the rest get new ids, so a
    renumbered row never takes an id that a later row of the file needs.
    """
    outcome: dict[Any, Any] = {}
    deferred: list[Row] = []
    for part in _batches(rows, batch):
        results = await transfer.insert_rows(spec.kind, part, keep_ids=True)
        waiting = len(deferred)
        for row, got in zip(part, results, strict=True):
            ident = row["id"] if spec.renumbered else tuple(row[k] for k in spec.key)
            if got is not None:
                tally.add(spec.kind, "imported")
                outcome[ident] = got
            elif spec.renumbered:
                deferred.append(row)
            else:
                tally.add(spec.kind, "skipped")
                outcome[ident] = None
        # Rows deferred to the second pass are counted done when they are written.
        await tally.advance(len(part) - (len(deferred) - waiting))
    for part in _batches(deferred, batch):
        # The identity is new and only the id was taken (a store with rows of its own), or
        # the identity is stored: then the insert is refused again, and the row skipped.
        results = await transfer.insert_rows(spec.kind, part, keep_ids=False)
        for row, got in zip(part, results, strict=True):
            outcome[row["id"]] = got
            if got is None:
                tally.add(spec.kind, "skipped")
            else:
                tally.add(spec.kind, "imported")
                tally.add(spec.kind, "renumbered")
        await tally.advance(len(part))
    return outcome


def _by_kind(parsed: ParsedExport, project: str | None) -> dict[str, list[Row]]:
    by_kind: dict[str, list[Row]] = {}
    for kind, row in parsed.records:
        if project is not None and (not table(kind).scoped or row["project"] != project):
            continue
        by_kind.setdefault(kind, []).append(row)
    return by_kind


class _Parents:
    """What happened to sessions and documents, which their children's rows follow."""

    def __init__(self) -> None:
        self.skipped_sessions: set[Any] = set()
        self.documents: dict[Any, Any] = {}  # id in the file -> id stored, or None: skipped
        self.memories: dict[Any, Any] = {}  # likewise

    def learn(self, kind: str, outcome: dict[Any, Any]) -> None:
        if kind == "memory":
            self.memories = outcome
        elif kind == "conversation_session":
            self.skipped_sessions = {key for key, got in outcome.items() if got is None}
        elif kind == "document":
            self.documents = outcome

    def children(self, kind: str, rows: list[Row]) -> list[Row]:
        """The rows still to write: a skipped parent's are dropped, chunks follow new ids."""
        if kind in _SESSION_CHILDREN:
            return [r for r in rows if (r["project"], r["session_id"]) not in self.skipped_sessions]
        if kind == "memory_version":
            return [
                {**r, "memory_id": self.memories[r["memory_id"]]}
                for r in rows
                if self.memories.get(r["memory_id"]) is not None
            ]
        if kind == "document_chunk":
            return [
                {**r, "document_id": self.documents[r["document_id"]]}
                for r in rows
                if self.documents.get(r["document_id"]) is not None
            ]
        return rows


# The columns of each record kind that hold free text a person or a tool wrote (and so may
# hold a credential), as the tools' write paths redact them; keys are redacted as keys.
# Ids, names of projects, sessions and tenants, and hashes are left as written.
_FREE_TEXT: dict[str, tuple[str, ...]] = {
    "memory_version": ("content",),
    "conversation_session": ("qa_summary", "pending_summary"),
    "conversation_summary": ("text",),
    "conversation_entry": ("content", "tool_name", "arguments", "source"),
    "conversation_exchange": ("question", "answer"),
    "tool_result": ("tool_name", "parameters", "result"),
    "scratchpad_snippet": ("snippet",),
    "preference": ("value",),
    "playbook": ("user_query", "slots", "tool_calls", "outcome"),
    "document": ("body",),
    "document_chunk": ("text",),
}
_KEYS: dict[str, tuple[str, ...]] = {"preference": ("key",), "memory_version": ("key",)}


def _redacted_row(kind: str, row: Row, gate: Redactor) -> Row:
    """An imported row through the same gate as a write by the tools.

    A row the gate changed gets its identity hash recomputed from the redacted text, as the
    tools compute it: a hash of the secret would outlive the secret, and a stale one would let
    the same redacted text be stored twice. A row the gate left alone keeps its hash as
    written (a lossless round trip).
    """
    if kind == "memory":
        return memory_row(redact_memory(_Record.model_validate(row).to_memory(), gate))
    changed = {c: gate.optional_text(row[c]) for c in _FREE_TEXT.get(kind, ()) if c in row}
    changed |= {c: gate.key(row[c]) for c in _KEYS.get(kind, ()) if row.get(c) is not None}
    changed = {c: v for c, v in changed.items() if v != row[c]}
    if not changed:
        return row
    redacted = {**row, **changed}
    rehash = _REHASH.get(kind)
    return redacted if rehash is None else {**redacted, **rehash(redacted)}


def _playbook_hash(row: Row) -> Row:
    slots, calls = json.loads(row["slots"]), json.loads(row["tool_calls"])
    digest = playbook_hash(row["flow"], row["user_query"], slots, calls, row["outcome"])
    return {"record_hash": digest}


# The identity hash of each record kind that has one, from its (redacted) row.
_REHASH: dict[str, Callable[[Row], Row]] = {
    "scratchpad_snippet": lambda row: {"norm_hash": normalised_hash(row["snippet"])},
    "playbook": _playbook_hash,
    "document": lambda row: {"content_hash": content_hash(row["body"])},
}


async def _link_memories(
    transfer: MemoryTransfer, rows: list[Row], written: dict[Any, Any]
) -> dict[Any, Any]:
    """Point supersessions at the memories' ids in this store; returns {file id: stored id}.

    A memory skipped because its identity is stored maps to the stored one, so its versions
    and the memories it supersedes follow it there. A memory written now whose newer one was
    renumbered or skipped gets that one's id in this store; one naming a memory the file
    does not hold (an edited file) is left current rather than pointing at a stranger.
    """
    skipped = [row for row in rows if written.get(row["id"]) is None]
    found = await transfer.memory_ids(skipped) if skipped else []
    stored = {**written, **{row["id"]: got for row, got in zip(skipped, found, strict=True)}}
    links: list[tuple[int, int | None]] = []
    for row in rows:
        new_id, newer = written.get(row["id"]), row["superseded_by"]
        if new_id is None or newer is None:
            continue
        target = stored.get(newer)
        if target != newer:
            links.append((new_id, target))
    await transfer.relink_superseded(links)
    return stored


async def import_records(
    transfer: MemoryTransfer,
    parsed: ParsedExport,
    *,
    project: str | None = None,
    batch: int = IMPORT_BATCH,
    progress: Progress | None = None,
    redaction: RedactionPolicy | None = None,
) -> ImportCounts:
    """Import a parsed export (only `project`'s rows when given), `batch` rows a transaction.

    Into an empty store the rows come back exactly as exported, ids included. Into a store
    that already holds rows, a row whose identity is stored (a memory's key in its project
    and layer, or its text; a session's id in its project; a preference's key for its user;
    a document's source for its tenant; ...) is skipped and counted, never overwritten; the
    rows of a skipped session or document are skipped with it. A new row whose id is taken
    gets a new id (a document's chunks follow it).

    Atomicity is per batch: the file was validated whole before (parse_export), so a bad
    file writes nothing; a failure while writing (the disk full, the process killed) keeps
    the batches already committed, and importing the same file again completes it (stored
    rows are skipped).
    Every memory passes the redaction gate first, like a write through the tools
    (`redaction`, default: every kind); the counts say what it took out.
    """
    if project is not None:
        check_project(project)
    if batch < 1:
        raise InvalidInputError("batch", "must be at least 1")
    by_kind = _by_kind(parsed, project)
    gate = Redactor(redaction or RedactionPolicy())
    for kind, rows in by_kind.items():
        by_kind[kind] = [_redacted_row(kind, row, gate) for row in rows]
    tally = _Tally(sum(len(rows) for rows in by_kind.values()), progress)
    parents = _Parents()
    for spec in TABLES:
        rows = parents.children(spec.kind, by_kind.get(spec.kind, []))
        if len(rows) < len(by_kind.get(spec.kind, [])):
            orphans = len(by_kind[spec.kind]) - len(rows)
            tally.add(spec.kind, "skipped", orphans)
            await tally.advance(orphans)
        if not rows:
            continue
        outcome = await _write_kind(transfer, spec, rows, batch, tally)
        if spec.kind == "memory":
            outcome = await _link_memories(transfer, rows, outcome)
        parents.learn(spec.kind, outcome)
    await transfer.finish_import()
    memory = tally.kinds.get("memory", {})
    counts = ImportCounts(
        imported=memory.get("imported", 0),
        skipped=memory.get("skipped", 0),
        renumbered=memory.get("renumbered", 0),
        stores=tally.kinds,
        redacted=gate.counts(),
    )
    log.info("stores.imported", **{k: v["imported"] for k, v in tally.kinds.items()})
    return counts
