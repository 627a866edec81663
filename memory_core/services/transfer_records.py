"""The records of an export besides memories: typed, and checked with the tools' own limits.

Each kind of record (memory_core.ports.transfer.TABLES) is a JSON object with `kind` and one
field per column. `parse_row` turns one into a row the storage writes, or refuses it with an
InvalidInputError naming the field. An export file is trusted no more than a tool call: the
texts go through the limits the tools that write them apply (`add_session_entry`,
`scratchpad_write`, `preferences_set`, `business_ingest`, ...); ids and counters must fit
the database's integers; times must lie between 1970 and now; embeddings must be float32.
Hashes (a snippet's, a playbook's, a document's) are kept as written, being 64 hex digits.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.config.policies import ConversationPolicy, Limits
from memory_core.domain.condense import cache_key
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.inputs import (
    MAX_IMPORTED_ID,
    MAX_SESSION_CHARS,
    check_metadata,
    check_project,
    check_session,
    check_text,
)
from memory_core.domain.knowledge import DocumentOrigin, PromotionReason, PromotionTarget
from memory_core.domain.knowledge_inputs import check_name, check_optional_name
from memory_core.domain.tags import check_tags
from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import ColumnType, Row, TableSpec

__all__ = ["RecordLimits", "check_time", "encode_row", "parse_row"]

# The same bounds as the tools that write these fields (memory_core.services.conversations,
# .preferences, .business).
_MAX_TOOL_NAME = 128
_MAX_SOURCE = 1024
_MAX_JSON_CHARS = 1_000_000
_MAX_CACHE_DURATION = 10_000
_MAX_PREFERENCE_KEY = 512
# An embedding of up to 8,192 float32 dimensions.
_MAX_EMBEDDING_BYTES = 8_192 * 4
# bigint columns; every other integer column is a 32-bit `integer` in PostgreSQL. Each is a
# number the store counts on from (ids, revisions, use sequences), so they stop at
# MAX_IMPORTED_ID, well short of the column's end.
_BIGINT = frozenset({"id", "document_id", "use_seq", "revision"})
_MAX_INTEGER = 2**31 - 1
# How far ahead of now an imported time may lie (clock skew between machines), no more: a
# time in the year 9999 would keep a row from ever expiring.
_FUTURE_SLACK = timedelta(days=1)
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_HASH = re.compile(r"[0-9a-f]{64}\Z")

# Columns that may be null (every other one is NOT NULL in both schemas).
_NULLABLE = {
    "memory_version": {"key"},
    "conversation_session": {"qa_summary_from", "qa_summary_until", "pending_summary"},
    "conversation_entry": {"tool_name", "arguments", "source", "summary_no"},
    "scratchpad_snippet": {
        "user_id",
        "tenant",
        "embedding",
        "embed_model",
        "promote_to",
        "promoted_to",
        "promoted_ref",
        "promoted_reason",
        "promoted_at",
    },
    "preference": {"flow_id", "embedding", "embed_model"},
    "playbook": {"embedding", "embed_model"},
    "document_chunk": {"embedding", "embed_model"},
}


@dataclass(frozen=True)
class RecordLimits:
    """The limits the tools apply, which imported records pass too."""

    limits: Limits = field(default_factory=Limits)
    conversation: ConversationPolicy = field(default_factory=ConversationPolicy)
    knowledge: KnowledgePolicy = field(default_factory=KnowledgePolicy)


def check_time(name: str, value: datetime | None, now: datetime) -> None:
    """A stored time lies between 1970 and now (plus a day of clock skew)."""
    if value is None:
        return
    try:
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        # The first or last day of the calendar with an offset that carries it past year 1
        # or 9999 in UTC (`9999-12-31T23:59:59-23:59`): outside the range all the same.
        moment = None
    if moment is None or not _EARLIEST <= moment <= now + _FUTURE_SLACK:
        raise InvalidInputError(name, f"must lie between 1970 and now (got {value.isoformat()})")


def _text(name: str, value: Any, now: datetime) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(name, "must be text")
    if "\x00" in value:
        raise InvalidInputError(name, "must not contain NUL characters")
    try:
        value.encode()
    except UnicodeEncodeError:
        raise InvalidInputError(name, "must be valid Unicode text") from None
    return value


def _int(name: str, value: Any, now: datetime) -> int:
    top = MAX_IMPORTED_ID if name in _BIGINT else _MAX_INTEGER
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise InvalidInputError(name, f"must be a whole number from 0 to {top}")
    return value


def _float(name: str, value: Any, now: datetime) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(name, "must be a number")
    if not math.isfinite(value):
        raise InvalidInputError(name, "must be a finite number")
    return float(value)


def _bool(name: str, value: Any, now: datetime) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(name, "must be true or false")
    return value


def _time(name: str, value: Any, now: datetime) -> datetime:
    if not isinstance(value, str):
        raise InvalidInputError(name, "must be an ISO-8601 time")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(name, "must be an ISO-8601 time") from None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    check_time(name, moment, now)
    return moment.astimezone(UTC)


def _bytes(name: str, value: Any, now: datetime) -> bytes:
    if not isinstance(value, str) or len(value) > _MAX_EMBEDDING_BYTES * 2:
        raise InvalidInputError(name, "must be base64 of float32 values")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError(name, "must be base64 of float32 values") from None
    if not raw or len(raw) % 4 or len(raw) > _MAX_EMBEDDING_BYTES:
        raise InvalidInputError(name, f"must hold 1 to {_MAX_EMBEDDING_BYTES // 4} float32 values")
    return raw


# One field's JSON value as its column's Python value ("json" columns are memories' only).
_VALUES: dict[ColumnType, Callable[[str, Any, datetime], Any]] = {
    "text": _text,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "time": _time,
    "bytes": _bytes,
    # A decoded JSON value (memory versions' metadata and tags); their checks say its shape.
    "json": lambda _name, value, _now: value,
}


def _json_text(name: str, text: str | None, shape: type[dict[str, Any]] | type[list[Any]]) -> Any:
    """A column holding JSON text: it must parse, as an object or array, and not be huge."""
    if text is None:
        return None
    if len(text) > _MAX_JSON_CHARS:
        raise InvalidInputError(name, f"must be at most {_MAX_JSON_CHARS} characters of JSON")
    value = _json_value(name, text)
    if not isinstance(value, shape):
        kind = "an object" if shape is dict else "an array"
        raise InvalidInputError(name, f"must be JSON text of {kind}")
    return value


def _refuse_constant(constant: str) -> Any:
    raise ValueError(constant)


def _json_value(name: str, text: str) -> Any:
    """JSON text as its value; NaN and Infinity are not JSON, and no backend reads them back."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise InvalidInputError(name, "must be JSON text (without NaN or Infinity)") from None


def _one_of(name: str, value: str | None, allowed: list[str]) -> None:
    if value is not None and value not in allowed:
        raise InvalidInputError(name, f"must be one of {', '.join(allowed)}")


def _hash(name: str, value: str) -> None:
    if not _HASH.match(value):
        raise InvalidInputError(name, "must be 64 lowercase hex digits (a sha256)")


def _embedding(row: Row) -> None:
    if (row["embedding"] is None) != (row["embed_model"] is None):
        raise InvalidInputError("embedding", "and embed_model are given together or not at all")
    if row["embed_model"] is not None:
        check_text("embed_model", row["embed_model"], max_chars=_MAX_TOOL_NAME)


def _in_session(row: Row) -> None:
    check_project(row["project"])
    check_session(row["session_id"])


def _check_session(row: Row, bounds: RecordLimits) -> None:
    _in_session(row)
    config = _json_text("config", row["config"], dict)
    try:
        bounds.conversation.model_validate({**bounds.conversation.model_dump(), **config})
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise InvalidInputError(f"config.{where}", exc.errors()[0]["msg"]) from None
    if len(row["qa_summary"]) > bounds.conversation.max_entry_chars:
        raise InvalidInputError(
            "qa_summary", f"must be at most {bounds.conversation.max_entry_chars} characters"
        )
    _json_text("pending_summary", row["pending_summary"], dict)
    for name in ("next_entry", "next_summary", "next_exchange"):
        if row[name] < 1:
            raise InvalidInputError(name, "must be at least 1")


def _check_summary(row: Row, bounds: RecordLimits) -> None:
    _in_session(row)
    check_text("text", row["text"], max_chars=bounds.conversation.max_entry_chars)
    ids = _json_text("entry_ids", row["entry_ids"], list)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in ids):
        raise InvalidInputError("entry_ids", "must be JSON text of an array of entry numbers")
    _one_of("source", row["source"], ["summarizer", "client", "fallback"])


def _check_entry(row: Row, bounds: RecordLimits) -> None:
    _in_session(row)
    _one_of("type", row["type"], [t.value for t in EntryType])
    _one_of("role", row["role"], [r.value for r in Role])
    kind = EntryType(row["type"])
    if kind is EntryType.TOOL_CALL:
        # A call is its name and arguments; words alongside them are optional.
        check_text("tool_name", row["tool_name"] or "", max_chars=_MAX_TOOL_NAME)
        if row["content"].strip():
            check_text("content", row["content"], max_chars=bounds.conversation.max_entry_chars)
    else:
        check_text("content", row["content"], max_chars=bounds.conversation.max_entry_chars)
    if row["tool_name"] is not None:
        check_text("tool_name", row["tool_name"], max_chars=_MAX_TOOL_NAME)
    _json_text("arguments", row["arguments"], dict)
    if row["source"] is not None:
        check_text("source", row["source"], max_chars=_MAX_SOURCE)
    # The same rules as add_session_entry: each optional field belongs to some types only.
    if row["arguments"] is not None and kind is not EntryType.TOOL_CALL:
        raise InvalidInputError("arguments", "is only for type 'tool_call'")
    if row["tool_name"] is not None and kind not in (EntryType.TOOL_CALL, EntryType.TOOL_RESULT):
        raise InvalidInputError("tool_name", "is only for types 'tool_call' and 'tool_result'")
    if row["source"] is not None and kind is not EntryType.CONTEXT:
        raise InvalidInputError("source", "is only for type 'context'")
    if row["is_error"] and kind is not EntryType.TOOL_RESULT:
        raise InvalidInputError("is_error", "is only for type 'tool_result'")
    if row["compressed"] != (row["summary_no"] is not None):
        raise InvalidInputError("summary_no", "is set on compressed entries, and only on them")


def _check_exchange(row: Row, bounds: RecordLimits) -> None:
    _in_session(row)
    check_text("question", row["question"], max_chars=bounds.conversation.max_entry_chars)
    check_text("answer", row["answer"], max_chars=bounds.conversation.max_entry_chars)


def _check_tool_result(row: Row, bounds: RecordLimits) -> None:
    _in_session(row)
    check_text("tool_name", row["tool_name"], max_chars=_MAX_TOOL_NAME)
    parameters = _json_text("parameters", row["parameters"], dict)
    if len(row["result"]) > _MAX_JSON_CHARS:
        raise InvalidInputError("result", f"must be at most {_MAX_JSON_CHARS} characters")
    _json_value("result", row["result"])
    if not 1 <= row["duration"] <= _MAX_CACHE_DURATION:
        raise InvalidInputError("duration", f"must be from 1 to {_MAX_CACHE_DURATION}")
    if row["remaining"] > row["duration"]:
        raise InvalidInputError("remaining", "must not exceed duration")
    if row["cache_key"] != cache_key(row["tool_name"], parameters):
        raise InvalidInputError("cache_key", "does not match tool_name and parameters")


def _check_snippet(row: Row, bounds: RecordLimits) -> None:
    check_text("session_id", row["session_id"], max_chars=MAX_SESSION_CHARS)
    check_optional_name("user_id", row["user_id"])
    check_optional_name("tenant", row["tenant"])
    check_text("snippet", row["snippet"], max_chars=bounds.knowledge.max_snippet_chars)
    _hash("norm_hash", row["norm_hash"])
    _embedding(row)
    targets = [t.value for t in PromotionTarget]
    _one_of("promote_to", row["promote_to"], targets)
    _one_of("promoted_to", row["promoted_to"], targets)
    _one_of("promoted_reason", row["promoted_reason"], [r.value for r in PromotionReason])
    if row["promoted_ref"] is not None:
        check_text("promoted_ref", row["promoted_ref"], max_chars=_MAX_SOURCE)


def _check_version(row: Row, bounds: RecordLimits) -> None:
    check_text("content", row["content"], max_chars=bounds.limits.max_content_chars)
    if row["key"] is not None:
        check_text("key", row["key"], max_chars=bounds.limits.max_key_chars)
    if not isinstance(row["metadata"], dict):
        raise InvalidInputError("metadata", "must be a JSON object")
    check_metadata(row["metadata"], bounds.limits)
    if not isinstance(row["tags"], list):
        raise InvalidInputError("tags", "must be a list of strings")
    row["tags"] = list(check_tags(row["tags"]))
    _one_of("change", row["change"], ["update", "learn"])


def _check_preference(row: Row, bounds: RecordLimits) -> None:
    check_name("user_id", row["user_id"])
    check_text("key", row["key"], max_chars=_MAX_PREFERENCE_KEY)
    check_text("value", row["value"], max_chars=bounds.knowledge.max_value_chars)
    check_optional_name("flow_id", row["flow_id"])
    _one_of("origin", row["origin"], ["client", "scratchpad"])
    _embedding(row)


def _check_playbook(row: Row, bounds: RecordLimits) -> None:
    check_name("user_id", row["user_id"])
    check_name("flow", row["flow"])
    top = bounds.knowledge.max_value_chars
    check_text("user_query", row["user_query"], max_chars=top)
    _json_text("slots", row["slots"], dict)
    _json_text("tool_calls", row["tool_calls"], list)
    check_text("outcome", row["outcome"], max_chars=top)
    _hash("record_hash", row["record_hash"])
    _embedding(row)


def _check_document(row: Row, bounds: RecordLimits) -> None:
    check_name("tenant", row["tenant"])
    check_text("source", row["source"], max_chars=_MAX_SOURCE)
    _one_of("origin", row["origin"], [o.value for o in DocumentOrigin])
    _hash("content_hash", row["content_hash"])
    check_text("body", row["body"], max_chars=bounds.knowledge.max_document_chars)
    if row["id"] < 1:
        raise InvalidInputError("id", "must be at least 1")


def _check_chunk(row: Row, bounds: RecordLimits) -> None:
    check_name("tenant", row["tenant"])
    check_text("text", row["text"], max_chars=bounds.knowledge.max_document_chars)
    if row["start_char"] > row["end_char"]:
        raise InvalidInputError("start_char", "must not lie after end_char")
    if row["id"] < 1:
        raise InvalidInputError("id", "must be at least 1")
    _embedding(row)


def _check_revision(row: Row, bounds: RecordLimits) -> None:
    check_name("tenant", row["tenant"])


_CHECKS = {
    "memory_version": _check_version,
    "conversation_session": _check_session,
    "conversation_summary": _check_summary,
    "conversation_entry": _check_entry,
    "conversation_exchange": _check_exchange,
    "tool_result": _check_tool_result,
    "scratchpad_snippet": _check_snippet,
    "preference": _check_preference,
    "playbook": _check_playbook,
    "document": _check_document,
    "document_chunk": _check_chunk,
    "document_revision": _check_revision,
}


def parse_row(spec: TableSpec, data: dict[str, Any], now: datetime, bounds: RecordLimits) -> Row:
    """One record of `spec`'s kind (not a memory) as a row, checked like the tools' input.

    Raises:
        InvalidInputError: `field` is the record's field at fault.
    """
    unknown = sorted(set(data) - set(spec.names) - {"kind"})
    if unknown:
        raise InvalidInputError(unknown[0], f"is not a field of a {spec.kind} record")
    nullable = _NULLABLE.get(spec.kind, set())
    row: Row = {}
    for name, type_ in spec.columns:
        if name not in data:
            raise InvalidInputError(name, "is required")
        value = data[name]
        if value is None:
            if name not in nullable:
                raise InvalidInputError(name, "must not be null")
            row[name] = None
        else:
            row[name] = _VALUES[type_](name, value, now)
    _CHECKS[spec.kind](row, bounds)
    return row


def encode_row(spec: TableSpec, row: Row) -> dict[str, Any]:
    """A row as its record's JSON object (`kind` first), the inverse of `parse_row`."""
    out: dict[str, Any] = {"kind": spec.kind}
    for name, type_ in spec.columns:
        value = row[name]
        if value is None:
            out[name] = None
        elif type_ == "time":
            out[name] = _time_text(value)
        elif type_ == "bytes":
            out[name] = base64.b64encode(value).decode("ascii")
        else:
            out[name] = value
    return out


def _time_text(value: datetime) -> str:
    # The form pydantic writes for the memory record's times, so every record reads alike.
    moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")
