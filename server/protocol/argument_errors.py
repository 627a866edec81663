"""Tool arguments a model got wrong, told in the server's own words.

The SDK reports a schema mismatch as pydantic's dump (`1 validation error for searchArguments
... https://errors.pydantic.dev/...`): a class name the model never saw, the input repeated back
and a link it cannot follow. These functions say the same as the domain errors do:
"Invalid `field`: what is allowed (got what was sent). Fix the argument and retry."
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = ["describe_validation_error", "unknown_arguments_message"]

# More than this many problems in one call are summarised: the first ones are what to fix.
_MAX_LISTED = 3
_MAX_ECHO = 40

# What pydantic's message means for a JSON caller (its own wording speaks of Python types).
_ALLOWED: dict[str, str] = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "list_type": "must be an array",
    "datetime_type": "must be an ISO-8601 date-time, e.g. 2026-01-31T09:00:00Z",
    "datetime_parsing": "must be an ISO-8601 date-time, e.g. 2026-01-31T09:00:00Z",
    "datetime_from_date_parsing": "must be an ISO-8601 date-time, e.g. 2026-01-31T09:00:00Z",
}

# Checks with a limit, worded with the limit pydantic reports in the error's context.
_BOUNDS: dict[str, str] = {
    "literal_error": "must be one of {expected}",
    "enum": "must be one of {expected}",
    "less_than_equal": "must be at most {le}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "greater_than": "must be greater than {gt}",
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must be at least {min_length} characters",
    "too_long": "must have at most {max_length} items",
    "too_short": "must have at least {min_length} items",
}


def _field(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "arguments"


def _echo(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_ECHO else text[: _MAX_ECHO - 3] + "..."


def _allowed(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind in _ALLOWED:
        return _ALLOWED[kind]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    if kind in _BOUNDS:
        try:
            return _BOUNDS[kind].format(**ctx)
        except KeyError:
            pass
    # Any other check: pydantic's sentence, minus its Python-facing start.
    msg = err["msg"]
    for start in ("Input should be", "Input must be"):
        if msg.startswith(start):
            return "must be" + msg[len(start) :]
    return msg[0].lower() + msg[1:] if msg else "is not valid"


def _describe(err: ErrorDetails) -> str:
    name = _field(err["loc"])
    if err["type"] == "missing":
        return f"Missing `{name}`: it is required"
    value = err.get("input")
    sized = err["type"] in ("string_too_long", "string_too_short", "too_long", "too_short")
    got = len(value) if sized and isinstance(value, str | list | dict) else _echo(value)
    return f"Invalid `{name}`: {_allowed(err)} (got {got})"


def describe_validation_error(exc: ValidationError) -> str:
    """One message for every argument a call got wrong, ending with what to do."""
    errors = exc.errors(include_url=False)
    parts = [_describe(e) for e in errors[:_MAX_LISTED]]
    more = len(errors) - _MAX_LISTED
    if more > 0:
        parts.append(f"and {more} more")
    noun = "argument" if len(errors) == 1 else "arguments"
    return "; ".join(parts) + f". Fix the {noun} and retry."


def unknown_arguments_message(tool: str, unknown: Iterable[str], valid: Iterable[str]) -> str:
    """Refuse arguments a tool does not take, listing the ones it does."""
    names = list(valid)
    parts = []
    for arg in sorted(unknown):
        close = difflib.get_close_matches(arg, names, n=1)
        parts.append(f"`{arg}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
    listed = ", ".join(names) if names else "none"
    noun = "argument" if len(parts) == 1 else "arguments"
    return (
        f"Unknown {noun} {', '.join(parts)} for `{tool}`. It takes: {listed}. "
        "Fix the names and retry."
    )
