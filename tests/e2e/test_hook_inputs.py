"""Hostile hook inputs (issue 34.5): never a traceback, each refused naming its field.

`memstrata hook <event>` always exits 0 and prints nothing on stdout when it cannot use its
input (Claude Code reads stdout); the one line on stderr must say what was wrong with which
field. The parser (server/hooks/payload.py) is fuzzed in process with hypothesis; the
installed command runs as a subprocess for each shape that reaches further in.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.hooks.payload import EVENTS, HookInputError, parse_payload
from tests.e2e.conftest import memstrata_exe
from tests.e2e.test_hooks import S1, Workspace, ws

pytestmark = pytest.mark.e2e

__all__ = ["ws"]  # the workspace fixture, imported for the tests here


_TEXT_FIELDS = (
    "session_id",
    "cwd",
    "transcript_path",
    "prompt",
    "source",
    "trigger",
    "reason",
    "tool_name",
    "agent_type",
    "agent_transcript_path",
    "last_assistant_message",
)
odd = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "", " ", "🎉"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, str]:
    command = draw(st.sampled_from(sorted(EVENTS)))
    data: dict[str, Any] = {"session_id": S1, "hook_event_name": EVENTS[command]}
    for name in draw(st.lists(st.sampled_from([*_TEXT_FIELDS, "tool_input"]), max_size=3)):
        data[name] = draw(odd)
    return command, json.dumps(data, allow_nan=True)


def _clean(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


@settings(max_examples=300, deadline=None)
@given(case=payloads())
def test_any_payload_is_parsed_clean_or_refused_naming_a_field(case: tuple[str, str]) -> None:
    command, raw = case
    refusal: str | None = None
    try:
        payload = parse_payload(raw, command)
    except HookInputError as exc:
        refusal = str(exc)
    if refusal is not None:
        assert any(name in refusal for name in (*_TEXT_FIELDS, "tool_input")), refusal
        return
    for name in _TEXT_FIELDS:
        assert _clean(str(getattr(payload, name, "") or "")), (name, raw)


def test_a_payload_nested_past_the_parser_is_refused_as_json() -> None:
    with pytest.raises(HookInputError, match="not valid JSON"):
        parse_payload('{"session_id": "s", "tool_input": ' + "[" * 5000 + "]" * 5000 + "}", "stop")


def _hook(ws: Workspace, command: str, stdin: bytes) -> tuple[int, str, str]:
    """The installed hook on raw bytes (a text pipe could not carry a lone surrogate)."""
    argv = [str(memstrata_exe()), "hook", command]
    pipe = subprocess.PIPE
    with subprocess.Popen(
        argv, stdin=pipe, stdout=pipe, stderr=pipe, env=ws.env, cwd=ws.repo
    ) as proc:
        out, err = proc.communicate(stdin, timeout=60)
    return proc.returncode, out.decode(), err.decode("utf-8", "replace")


def _raw(ws: Workspace, event: str, **fields: Any) -> bytes:
    # surrogatepass: a lone surrogate written as Claude Code's JSON would carry it, escaped.
    return json.dumps(ws.payload(event, **fields)).encode("utf-8", "surrogatepass")


# (command, stdin, the field the refusal must name).
REFUSED = [
    ("user-prompt-submit", b"\xff\xfe{}", "stdin"),
    ("user-prompt-submit", b"\xef\xbb\xbf{}", "JSON"),
    ("session-start", b'{"session_id": "a"} {"session_id": "b"}', "JSON"),
    ("session-start", b'{"session_id": 1e999}', "session_id"),
    ("pre-tool-use", b'{"session_id": "a", "tool_input": [1]}', "tool_input"),
]
# Reaching further in: the field must be named, not what failed with it later.
NAMED_LATER = [
    ("session-end", {"transcript_path": "/tmp/a\x00b", "reason": "x"}, "transcript_path"),
    ("session-end", {"transcript_path": "/tmp/\ud800", "reason": "x"}, "transcript_path"),
    ("user-prompt-submit", {"prompt": "deploy \ud800 now"}, "prompt"),
    ("user-prompt-submit", {"session_id": "a\x00b", "prompt": "deploy"}, "session_id"),
    ("user-prompt-submit", {"cwd": "/tmp/\x00x", "prompt": "deploy"}, "cwd"),
    ("subagent-stop", {"agent_transcript_path": "/x\x00", "agent_type": "a"}, "agent_transcript"),
]


@pytest.mark.parametrize(("command", "stdin", "field"), REFUSED)
def test_unusable_stdin_is_refused_in_one_line_without_a_traceback(
    ws: Workspace, command: str, stdin: bytes, field: str
) -> None:
    code, out, err = _hook(ws, command, stdin)
    assert (code, out) == (0, "")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    prefix = f"memstrata hook {command}: "
    assert err.startswith(prefix) and field in err[len(prefix) :], err


def test_deep_nesting_on_stdin_is_answered_in_one_line(ws: Workspace) -> None:
    code, out, err = _hook(ws, "pre-tool-use", b"[" * 5000 + b"]" * 5000)
    assert (code, out) == (0, "")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(("command", "fields", "field"), NAMED_LATER)
def test_a_hostile_field_gets_no_traceback(
    ws: Workspace, command: str, fields: dict[str, Any], field: str
) -> None:
    code, out, err = _hook(ws, command, _raw(ws, EVENTS[command], **fields))
    assert (code, out) == (0, "")
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err


@pytest.mark.parametrize(("command", "fields", "field"), NAMED_LATER)
def test_a_hostile_field_is_refused_by_name(
    ws: Workspace, command: str, fields: dict[str, Any], field: str
) -> None:
    code, out, err = _hook(ws, command, _raw(ws, EVENTS[command], **fields))
    assert (code, out) == (0, "")
    prefix = f"memstrata hook {command}: "
    assert err.startswith(prefix) and field in err[len(prefix) :], err
