"""Export and import memories as JSON lines, and back the store up (the CLI's use cases).

The export format, version 1: a header line
`{"format": "memstrata-export", "format_version": 1, "schema_version": N, "exported_at": ...,
"project": null | "name"}`, then one line per memory with every column of the row, tier and
access fields included (`last_accessed`, `access_count`, `memory_tier`, ...). Embeddings are
not exported: they belong to a model, and the store embeds imported rows on its own (the
server's backfill, or `memstrata reindex`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from memory_core.config import Limits
from memory_core.domain.inputs import (
    check_metadata,
    check_project,
    check_session,
    check_text,
    content_hash,
)
from memory_core.domain.memory_redaction import redact_memory
from memory_core.domain.models import Layer, Memory, Tier
from memory_core.domain.redaction import RedactionPolicy, Redactor
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock
from memory_core.transfer_ports import ImportCounts, MemoryTransfer, Progress

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ExportHeader",
    "ParsedExport",
    "export_lines",
    "import_memories",
    "parse_export",
]

log = structlog.get_logger(__name__)

FORMAT = "memstrata-export"
FORMAT_VERSION = 1
_PAGE = 500


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
        )


class ParsedExport(BaseModel):
    """A validated export file: its header and its memories, in file order."""

    model_config = ConfigDict(frozen=True)

    header: ExportHeader
    memories: list[Memory]


async def export_lines(
    transfer: MemoryTransfer,
    clock: Clock,
    project: str | None = None,
    *,
    progress: Progress | None = None,
) -> AsyncIterator[str]:
    """The export, line by line (no trailing newlines): the header, then rows in id order.

    Pages are read one at a time, so a large store is never held in memory; rows written
    while the export runs may or may not be included.
    """
    if project is not None:
        check_project(project)
    total = await transfer.count(project)
    header = ExportHeader(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        schema_version=await transfer.schema_version(),
        exported_at=clock.now(),
        project=project,
    )
    yield header.model_dump_json()
    done, after = 0, 0
    while page := await transfer.export_page(project, after_id=after, limit=_PAGE):
        for memory in page:
            yield _Record.of(memory).model_dump_json()
        done += len(page)
        after = page[-1].id
        if progress is not None:
            await progress(done, max(total, done))
    log.info("memories.exported", project=project or "*", count=done)


def _line_error(number: int, reason: str) -> InvalidInputError:
    return InvalidInputError(f"line {number}", reason)


# The largest id SQLite and PostgreSQL (bigint) store.
_MAX_ID = 2**63 - 1
# How far ahead of now an imported time may lie (clock skew between machines), no more: a
# last use in the year 9999 would keep a memory from ever expiring.
_FUTURE_SLACK = timedelta(days=1)
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
# Errors listed per failed import before "and N more".
_ERRORS_SHOWN = 20


def _check_time(field: str, value: datetime | None, now: datetime) -> None:
    if value is None:
        return
    moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if not _EARLIEST <= moment <= now + _FUTURE_SLACK:
        raise InvalidInputError(field, f"must lie between 1970 and now (got {value.isoformat()})")


def _parse_record(number: int, data: Any, now: datetime, limits: Limits) -> Memory:
    """One record, through the limits the tools apply to the same fields.

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
        check_metadata(record.metadata, limits)
        if not 1 <= record.id <= _MAX_ID:
            raise InvalidInputError("id", f"must be an integer from 1 to {_MAX_ID}")
        if record.access_count < 0 or record.token_count < 0:
            raise InvalidInputError("access_count", "and token_count must not be negative")
        for name in ("created_at", "updated_at", "last_accessed"):
            _check_time(name, getattr(record, name), now)
    except InvalidInputError as exc:
        raise _line_error(number, f"{exc.field}: {exc.reason}") from exc
    return record.to_memory()


def parse_export(
    lines: Iterable[str],
    *,
    schema_version: int,
    now: datetime | None = None,
    limits: Limits | None = None,
) -> ParsedExport:
    """Validate a whole export before anything is written.

    Every line is checked, so one attempt lists every bad line (the first 20), each by its
    number and field, through the limits the tools apply.

    Args:
        lines: The file's lines; blank lines are ignored.
        schema_version: The importing store's schema version; a newer export is refused.
        now: The time imported times may not lie beyond (by more than a day).
        limits: The store's limits (the tools' own); the defaults when not given.

    Raises:
        InvalidInputError: `field` names the line ("line 3", or "file" for several) and
            `reason` what is wrong.
    """
    now = now or datetime.now(UTC)
    limits = limits or Limits()
    header: ExportHeader | None = None
    memories: list[Memory] = []
    errors: list[InvalidInputError] = []
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
                memories.append(_parse_record(number, data, now, limits))
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
    return ParsedExport(header=header, memories=memories)


def _parse_header(number: int, data: Any, schema_version: int) -> ExportHeader:
    try:
        header = ExportHeader.model_validate(data)
    except ValidationError as exc:
        raise _line_error(
            number, f"must be the {FORMAT} header (format, format_version, schema_version, ...)"
        ) from exc
    if header.format_version != FORMAT_VERSION:
        raise _line_error(
            number,
            f"format_version {header.format_version} is not supported (this memstrata reads "
            f"{FORMAT_VERSION})",
        )
    if header.schema_version > schema_version:
        raise _line_error(
            number,
            f"the export comes from schema version {header.schema_version}, newer than this "
            f"store's {schema_version}; upgrade memstrata first",
        )
    return header


async def import_memories(
    transfer: MemoryTransfer,
    parsed: ParsedExport,
    *,
    project: str | None = None,
    progress: Progress | None = None,
    redaction: RedactionPolicy | None = None,
) -> ImportCounts:
    """Import a parsed export (only `project`'s rows when given), all or nothing.

    Into an empty store the rows come back exactly as exported, ids included. Into a store
    that already holds memories, a row whose identity is stored (the same key in its project
    and layer, or the same text in its project and layer, and session for working notes) is
    skipped and counted, never overwritten; a new row whose id is taken gets a new id.
    Every row passes the redaction gate first, like a write through the tools (`redaction`,
    default: every kind); the counts say what it took out.
    """
    memories = parsed.memories
    if project is not None:
        check_project(project)
        memories = [m for m in memories if m.project == project]
    gate = Redactor(redaction or RedactionPolicy())
    memories = [redact_memory(m, gate) for m in memories]
    counts = await transfer.import_memories(memories, progress=progress)
    counts = counts.model_copy(update={"redacted": gate.counts()})
    log.info("memories.imported", **counts.model_dump())
    return counts
