"""Checks on the scopes and texts of the cache hierarchy; each failure names the field."""

from __future__ import annotations

import json
import re

from pydantic import JsonValue

from memory_core.domain.inputs import check_text
from memory_core.errors import InvalidInputError

__all__ = [
    "MAX_NAME_CHARS",
    "check_json_size",
    "check_name",
    "check_optional_name",
    "check_session_id",
]

MAX_NAME_CHARS = 128
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")


def check_name(field: str, value: str) -> str:
    """A user, tenant or flow id: 1-128 letters, digits or . _ : / @ + -."""
    if not _NAME.match(value):
        raise InvalidInputError(
            field,
            "must be 1-128 characters of letters, digits and . _ : / @ + -, "
            "starting with a letter or digit",
        )
    return value


def check_optional_name(field: str, value: str | None) -> str | None:
    """`check_name` for an optional argument."""
    return None if value is None else check_name(field, value)


def check_session_id(value: str) -> str:
    """A required session id of at most 128 characters."""
    return check_text("session_id", value, max_chars=MAX_NAME_CHARS)


def check_json_size(field: str, value: JsonValue, *, max_chars: int) -> str:
    """The canonical JSON text of a value, refused when longer than `max_chars`."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > max_chars:
        raise InvalidInputError(field, f"must be at most {max_chars} characters as JSON")
    return text
