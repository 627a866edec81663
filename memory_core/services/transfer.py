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
from datetime import datetime
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from memory_core.domain.inputs import check_project, check_text, content_hash
from memory_core.domain.models import Layer, Memory, Tier
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
# Export files are trusted more than client input (they come from a store), but a text must
# still be one a store could hold; the configured size limit is not applied, so a store with
# a larger limit can be moved into one with the default.
_MAX_TEXT = 10**9


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


def _parse_record(number: int, data: Any) -> Memory:
    try:
        record = _Record.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record"
        raise _line_error(number, f"{where}: {first['msg']}") from exc
    try:
        check_project(record.project)
        check_text("content", record.content, max_chars=_MAX_TEXT)
        if record.layer in (Layer.SEMANTIC, Layer.PROCEDURAL) and not record.key:
            raise InvalidInputError("key", f"is required in the {record.layer.value} layer")
        if record.id < 1:
            raise InvalidInputError("id", "must be a positive integer")
    except InvalidInputError as exc:
        raise _line_error(number, f"{exc.field}: {exc.reason}") from exc
    return record.to_memory()


def parse_export(lines: Iterable[str], *, schema_version: int) -> ParsedExport:
    """Validate a whole export before anything is written.

    Args:
        lines: The file's lines; blank lines are ignored.
        schema_version: The importing store's schema version; a newer export is refused.

    Raises:
        InvalidInputError: `field` names the line ("line 3") and `reason` what is wrong.
    """
    header: ExportHeader | None = None
    memories: list[Memory] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _line_error(number, f"is not JSON ({exc.msg})") from exc
        if header is None:
            header = _parse_header(number, data, schema_version)
        else:
            memories.append(_parse_record(number, data))
    if header is None:
        raise InvalidInputError("file", f"is empty; expected a {FORMAT} header line")
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
) -> ImportCounts:
    """Import a parsed export (only `project`'s rows when given), all or nothing.

    Into an empty store the rows come back exactly as exported, ids included. Into a store
    that already holds memories, a row whose identity is stored (the same key in its project
    and layer, or the same text in its project and layer, and session for working notes) is
    skipped and counted, never overwritten; a new row whose id is taken gets a new id.
    """
    memories = parsed.memories
    if project is not None:
        check_project(project)
        memories = [m for m in memories if m.project == project]
    counts = await transfer.import_memories(memories, progress=progress)
    log.info("memories.imported", **counts.model_dump())
    return counts
