"""The JSON Claude Code writes on a hook's stdin, checked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EVENTS", "HookInputError", "HookPayload", "ToolDenial", "parse_payload"]

# CLI name -> Claude Code's hook_event_name.
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    "stop": "Stop",
    "pre-tool-use": "PreToolUse",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
}
_MAX_STDIN = 4_000_000


class HookInputError(ValueError):
    """The hook's input is unusable; the message names the field."""


class ToolDenial(str):
    """What PreToolUse answers to deny the tool call: the reason Claude Code gives the model.

    A str, so every hook still returns text; the hook's output turns this one into
    `permissionDecision: "deny"` with the text as `permissionDecisionReason` rather than
    `additionalContext`.
    """

    __slots__ = ()


@dataclass(frozen=True)
class HookPayload:
    """The fields the hooks use; each event's own field is None for the others."""

    event: str  # Claude Code's name, e.g. "SessionStart"
    session_id: str
    cwd: Path
    transcript_path: Path | None
    source: str | None = None  # SessionStart: startup | resume | clear | compact
    prompt: str | None = None  # UserPromptSubmit
    trigger: str | None = None  # PreCompact: manual | auto
    reason: str | None = None  # SessionEnd
    stop_hook_active: bool = False  # Stop: Claude Code is already continuing because of a Stop hook
    tool_name: str | None = None  # PreToolUse
    tool_input: dict[str, Any] | None = None  # PreToolUse
    agent_type: str | None = None  # SubagentStart, SubagentStop ("" for Claude Code's own)
    agent_transcript_path: Path | None = None  # SubagentStop
    last_assistant_message: str | None = None  # SubagentStop


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookInputError(f"{name} must be a string")
    # Refused here, by name: later they fail as "embedded null byte" (a path) or are stored.
    if "\x00" in value:
        raise HookInputError(f"{name} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise HookInputError(f"{name} must be valid Unicode text (a lone surrogate)") from None
    return value


def _object(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise HookInputError(f"{name} must be an object")
    return value


def _path(data: dict[str, Any], name: str) -> Path | None:
    value = _text(data, name)
    return Path(value).expanduser() if value else None


def parse_payload(raw: str, command: str) -> HookPayload:
    """The payload of `command` (a CLI event name) from the text on stdin.

    Raises:
        HookInputError: Unknown event, empty or invalid JSON, or a missing or mistyped field.
    """
    event = EVENTS.get(command)
    if event is None:
        raise HookInputError(f"unknown event {command!r}; expected one of {', '.join(EVENTS)}")
    if not raw.strip():
        raise HookInputError("stdin is empty; expected the hook's JSON")
    if len(raw) > _MAX_STDIN:
        raise HookInputError("stdin is larger than 4 MB")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise HookInputError(f"stdin is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise HookInputError("stdin is not valid JSON (nested too deep)") from None
    if not isinstance(data, dict):
        raise HookInputError("stdin must be a JSON object")
    session_id = _text(data, "session_id")
    if not session_id or not session_id.strip():
        raise HookInputError("session_id is missing")
    named = _text(data, "hook_event_name")
    if named is not None and named != event:
        raise HookInputError(f"hook_event_name is {named!r} but the command is {command!r}")
    cwd = _text(data, "cwd")
    transcript = _text(data, "transcript_path")
    return HookPayload(
        event=event,
        session_id=session_id.strip(),
        cwd=Path(cwd) if cwd else Path.cwd(),
        transcript_path=Path(transcript).expanduser() if transcript else None,
        source=_text(data, "source"),
        prompt=_text(data, "prompt"),
        trigger=_text(data, "trigger"),
        reason=_text(data, "reason"),
        stop_hook_active=data.get("stop_hook_active") is True,
        tool_name=_text(data, "tool_name"),
        tool_input=_object(data, "tool_input"),
        agent_type=_text(data, "agent_type"),
        agent_transcript_path=_path(data, "agent_transcript_path"),
        last_assistant_message=_text(data, "last_assistant_message"),
    )
