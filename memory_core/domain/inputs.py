"""Checks on client input; each failure names the field and what is allowed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import JsonValue

from memory_core.config.policies import Limits
from memory_core.domain.fence import flat
from memory_core.domain.project_names import PROJECT_NAME
from memory_core.errors import InvalidInputError

__all__ = [
    "MAX_AUTHOR_CHARS",
    "MAX_IMPORTED_ID",
    "MAX_METADATA_DEPTH",
    "check_author",
    "check_ids",
    "check_key",
    "check_limit",
    "check_metadata",
    "check_project",
    "check_session",
    "check_text",
    "check_time_range",
    "check_token_budget",
    "content_hash",
    "is_unicode_text",
]

MAX_SESSION_CHARS = 128
MAX_AUTHOR_CHARS = 100
MAX_METADATA_DEPTH = 8


# Memory ids are positive SQLite/PostgreSQL integers; ids one call may name.
_MAX_MEMORY_ID = 2**63 - 1
# The largest id an import may write. Ids reach clients as JSON numbers, which JavaScript
# clients (Claude Code, the Inspector) read as doubles, exact only to 2^53; and the store must
# still hand out the ids after the largest written (a sequence set past 2^63 - 1 overflows).
MAX_IMPORTED_ID = 2**53 - 1
MAX_IDS = 1000


def check_ids(field: str, ids: Iterable[int] | None) -> tuple[int, ...]:
    """Memory ids a client names (`supersedes`, `pin`, `forget`): positive, each once.

    Raises:
        InvalidInputError: Not a list of positive integers, or more than MAX_IDS of them.
    """
    if ids is None:
        return ()
    out: list[int] = []
    for n, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_MEMORY_ID:
            raise InvalidInputError(f"{field}[{n}]", f"must be a memory id (got {value!r})")
        if value not in out:
            out.append(value)
    if len(out) > MAX_IDS:
        raise InvalidInputError(field, f"must hold at most {MAX_IDS} ids (got {len(out)})")
    return tuple(out)


def check_project(project: str) -> str:
    """A project name: 1-128 letters, digits or . _ : / @ -, starting with a letter or digit."""
    if not isinstance(project, str) or not PROJECT_NAME.match(project):
        raise InvalidInputError(
            "project",
            "must be 1-128 characters of letters, digits and . _ : / @ -, "
            "starting with a letter or digit",
        )
    return project


def is_unicode_text(text: str) -> bool:
    """True when `text` encodes as UTF-8 (holds no lone surrogate)."""
    return _is_utf8(text)


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def check_text(field: str, value: str, *, max_chars: int) -> str:
    """Non-blank text of at most `max_chars` characters, stripped of outer white space."""
    text = value.strip()
    if not text:
        raise InvalidInputError(field, "must not be empty")
    if "\x00" in text:
        raise InvalidInputError(field, "must not contain NUL characters")
    if not _is_utf8(text):
        raise InvalidInputError(field, "must be valid Unicode text (no lone surrogates)")
    if len(text) > max_chars:
        raise InvalidInputError(field, f"must be at most {max_chars} characters (got {len(text)})")
    return text


def check_key(field: str, value: str | None, limits: Limits) -> str:
    """A required key or condition, flattened to one line.

    A key is shown to models as the head of a line ("key: value", "when condition: action"):
    a newline in it could open a heading or a "SYSTEM:" line of its own in what every later
    session is given, and control or bidi characters could hide what it says. So line breaks
    and runs of white space become one space and control/format characters are dropped, on
    write and on lookup alike (domain.fence.flat), so `recall` finds the key as written.
    """
    if value is None:
        raise InvalidInputError(field, "is required for this layer")
    text = check_text(field, value, max_chars=limits.max_key_chars)
    flattened = flat(text)
    if not flattened:
        raise InvalidInputError(field, "must hold a visible character")
    return flattened


def check_author(author: str | None, field: str = "author") -> str | None:
    """An optional author name: one line of at most 100 characters, inner spaces collapsed.

    Collapsing keeps "Ada  Lovelace" and "Ada Lovelace" one author for the filter.
    """
    if author is None:
        return None
    text = check_text(field, author, max_chars=MAX_AUTHOR_CHARS)
    if any(ch in text for ch in "\r\n\t"):
        raise InvalidInputError(field, "must be one line (a name, not a text)")
    return " ".join(text.split())


def check_session(session_id: str | None) -> str | None:
    """An optional session id of at most 128 characters."""
    if session_id is None:
        return None
    return check_text("session_id", session_id, max_chars=MAX_SESSION_CHARS)


def _depth(value: JsonValue) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def check_metadata(metadata: dict[str, JsonValue] | None, limits: Limits) -> dict[str, JsonValue]:
    """A JSON object within the size and nesting limits."""
    if metadata is None:
        return {}
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # NaN or Infinity: not JSON, and no backend stores them alike
        raise InvalidInputError("metadata", "must not contain NaN or Infinity") from exc
    if not _is_utf8(encoded):
        raise InvalidInputError("metadata", "must be valid Unicode text (no lone surrogates)")
    size = len(encoded.encode())
    if size > limits.max_metadata_bytes:
        raise InvalidInputError(
            "metadata", f"must be at most {limits.max_metadata_bytes} bytes as JSON (got {size})"
        )
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidInputError("metadata", f"must nest at most {MAX_METADATA_DEPTH} levels deep")
    return metadata


def check_limit(field: str, value: int, limits: Limits) -> int:
    """A result count from 1 to the configured maximum."""
    if not 1 <= value <= limits.max_limit:
        raise InvalidInputError(field, f"must be between 1 and {limits.max_limit} (got {value})")
    return value


def check_token_budget(value: int | None) -> int | None:
    """An optional token budget of at least one token."""
    if value is not None and value < 1:
        raise InvalidInputError("token_budget", "must be at least 1 when given")
    return value


def _utc(value: datetime) -> datetime:
    # A time without a zone is taken as UTC, the zone every stored time is in.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def check_time_range(
    since: datetime | None, until: datetime | None
) -> tuple[datetime | None, datetime | None]:
    """Normalise both ends to UTC and require since < until when both are given."""
    try:
        since = _utc(since) if since else None
    except OverflowError:
        raise InvalidInputError("since", "is outside the supported date range") from None
    try:
        until = _utc(until) if until else None
    except OverflowError:
        raise InvalidInputError("until", "is outside the supported date range") from None
    if since and until and since >= until:
        raise InvalidInputError("until", "must be later than since")
    return since, until


def content_hash(text: str) -> str:
    """The identity of a text for de-duplication."""
    return hashlib.sha256(text.encode()).hexdigest()
