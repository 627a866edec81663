"""Importing a conversation session: what an export must hold, and its texts redacted.

An import is held to what a live session holds to: its links (entries and summaries, the
cache's keys), its numbers (64-bit ids and durations), every text within the limits
`add_session_entry` applies, under the session's own settings (the export's `config` over the
server's), and the redaction gate every write passes. A bad field is named by its position in
the export (`data.entries[3].content`), the way a person finds it in the file. The JSON checks
and the redaction of a JSON object are shared with the live session (services.conversations).
"""

from __future__ import annotations

import json

from pydantic import JsonValue, ValidationError

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.condense import cache_key
from memory_core.domain.conversation import SessionExport
from memory_core.domain.inputs import check_session, is_unicode_text
from memory_core.domain.redaction import Redaction, RedactionPolicy, redact_json, redact_text
from memory_core.errors import InvalidInputError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_SOURCE",
    "MAX_TOOL_NAME",
    "check_json_size",
    "read_session_export",
    "redacted_object",
    "redacted_session",
]

MAX_TOOL_NAME = 128
MAX_SOURCE = 1024
MAX_JSON_BYTES = 1_000_000


def read_session_export(
    data: JsonValue, session_id: str | None, policy: ConversationPolicy
) -> SessionExport:
    """The export `data` as a session to import (under `session_id` when given), checked.

    Raises:
        InvalidInputError: A field the export may not hold, named by its place in `data`.
    """
    try:
        parsed = SessionExport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInputError(f"data.{where}" if where else "data", first["msg"]) from None
    if session_id is not None:
        parsed = parsed.model_copy(update={"session_id": session_id})
    checked = check_session(parsed.session_id)
    assert checked is not None
    parsed = parsed.model_copy(update={"session_id": checked})
    _check_export(parsed)
    try:
        effective = policy.model_validate({**policy.model_dump(), **parsed.config})
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise InvalidInputError(
            f"data.config.{where}" if where else "data.config", exc.errors()[0]["msg"]
        ) from None
    _check_export_texts(parsed, effective)
    return parsed


def redacted_session(
    data: SessionExport, policy: RedactionPolicy, report: Redaction
) -> SessionExport:
    """An imported session, stored like any other write: with credentials redacted."""

    def text(value: str) -> str:
        return redact_text(value, policy, report)[0]

    def optional(value: str | None) -> str | None:
        return None if value is None else text(value)

    cache = []
    for c in data.cache:
        params = redact_json(c.parameters, policy, report)[0]
        tool_name = text(c.tool_name)
        cache.append(
            c.model_copy(
                update={
                    "tool_name": tool_name,
                    "parameters": params,
                    "result": redact_json(c.result, policy, report)[0],
                    "key": cache_key(tool_name, params),
                }
            )
        )
    return data.model_copy(
        update={
            "entries": [
                e.model_copy(
                    update={
                        "content": text(e.content),
                        "arguments": redacted_object(e.arguments, policy, report),
                        "tool_name": optional(e.tool_name),
                        "source": optional(e.source),
                    }
                )
                for e in data.entries
            ],
            "summaries": [s.model_copy(update={"text": text(s.text)}) for s in data.summaries],
            "exchanges": [
                x.model_copy(update={"question": text(x.question), "answer": text(x.answer)})
                for x in data.exchanges
            ],
            "qa_summary": text(data.qa_summary),
            "cache": cache,
        }
    )


def redacted_object(
    value: dict[str, JsonValue] | None, policy: RedactionPolicy, report: Redaction
) -> dict[str, JsonValue] | None:
    """A JSON object redacted whole: keys, values, and values under secret-named keys."""
    if value is None:
        return None
    out = redact_json(value, policy, report)[0]
    assert isinstance(out, dict)  # an object stays an object
    return out


def check_json_size(
    field_name: str, value: JsonValue, max_bytes: int | None = MAX_JSON_BYTES
) -> None:
    """`value` is JSON of valid Unicode text, at most `max_bytes` as JSON (None: any size)."""
    try:
        size = len(json.dumps(value, ensure_ascii=False).encode())
    except (UnicodeEncodeError, ValueError):
        raise InvalidInputError(field_name, "must be JSON of valid Unicode text") from None
    if max_bytes is not None and size > max_bytes:
        raise InvalidInputError(field_name, f"must be at most {max_bytes} bytes as JSON")


def _check_numbers(data: SessionExport) -> None:
    """Every id and duration must fit the database's 64-bit integers."""
    numbers = [e.id for e in data.entries] + [x.id for x in data.summaries]
    numbers += [x.id for x in data.exchanges] + [c.duration for c in data.cache]
    numbers += [c.remaining for c in data.cache]
    if any(not 0 <= n < 2**63 for n in numbers):
        raise InvalidInputError("data", "ids and durations must be whole numbers below 2^63")


def _check_import_text(field_name: str, value: str, max_chars: int | None) -> None:
    """The limits of `add_session_entry` on one imported text (which may be empty)."""
    if "\x00" in value:
        raise InvalidInputError(field_name, "must not contain NUL characters")
    if not is_unicode_text(value):
        raise InvalidInputError(field_name, "must be valid Unicode text (no lone surrogates)")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInputError(
            field_name, f"must be at most {max_chars} characters (got {len(value)})"
        )


def _check_export_texts(data: SessionExport, policy: ConversationPolicy) -> None:
    """Every text of an import within the limits a live session holds to.

    Fields are named by their position in the export (`data.entries[3].content`), the way a
    person finds them in the file.
    """
    cap = policy.max_entry_chars
    for i, e in enumerate(data.entries):
        _check_import_text(f"data.entries[{i}].content", e.content, cap)
        if e.tool_name is not None:
            _check_import_text(f"data.entries[{i}].tool_name", e.tool_name, MAX_TOOL_NAME)
        if e.source is not None:
            _check_import_text(f"data.entries[{i}].source", e.source, MAX_SOURCE)
        if e.arguments is not None:
            check_json_size(f"data.entries[{i}].arguments", e.arguments)
    for i, x in enumerate(data.summaries):
        _check_import_text(f"data.summaries[{i}].text", x.text, None)
    for i, q in enumerate(data.exchanges):
        _check_import_text(f"data.exchanges[{i}].question", q.question, cap)
        _check_import_text(f"data.exchanges[{i}].answer", q.answer, cap)
    _check_import_text("data.qa_summary", data.qa_summary, None)
    for i, c in enumerate(data.cache):
        _check_import_text(f"data.cache[{i}].tool_name", c.tool_name, MAX_TOOL_NAME)
        check_json_size(f"data.cache[{i}].parameters", c.parameters)
        check_json_size(f"data.cache[{i}].result", c.result)


def _check_export(data: SessionExport) -> None:
    """Links inside an export must hold, or the imported session would lie about itself."""
    check_json_size("data", data.model_dump(mode="json"), max_bytes=None)
    _check_numbers(data)
    for name, ids in (
        ("entries", [e.id for e in data.entries]),
        ("summaries", [x.id for x in data.summaries]),
        ("exchanges", [x.id for x in data.exchanges]),
        ("cache", [c.key for c in data.cache]),
    ):
        if len(set(ids)) != len(ids):
            raise InvalidInputError(f"data.{name}", "ids must be unique")
    summary_ids = {s.id for s in data.summaries}
    for e in data.entries:
        if e.compressed != (e.summary_id is not None):
            raise InvalidInputError(
                f"data.entries[{e.id}]", "compressed entries need a summary_id, others none"
            )
        if e.summary_id is not None and e.summary_id not in summary_ids:
            raise InvalidInputError(
                f"data.entries[{e.id}].summary_id", "must name a summary in data.summaries"
            )
    known = {e.id for e in data.entries}
    for x in data.summaries:
        if not set(x.entry_ids) <= known:
            raise InvalidInputError(
                f"data.summaries[{x.id}].entry_ids", "must name entries in data.entries"
            )
    for c in data.cache:
        if c.key != cache_key(c.tool_name, c.parameters):
            raise InvalidInputError("data.cache", f"the key of {c.tool_name} does not match it")
