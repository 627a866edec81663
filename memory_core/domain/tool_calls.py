"""A tool call as a situation a procedural rule's condition can match (pure).

A rule "when committing: run make lint and make test" is about the moment the model runs
`git commit`, and "before editing migrations: ..." about an Edit of `migrations/0012.sql`.
`tool_situation` turns a Claude Code tool call (its name and input) into words such a
condition can be matched against (domain.rules.rule_applies): the action the tool performs,
said as a verb ("edit", "write", "run"), then what it acts on (the command, the file path
split into its words, an MCP tool's name and string arguments). Tools that only read
(Read, Grep, Glob, LS, WebFetch, WebSearch, TodoWrite) give None: no rule is about reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ACTING_TOOLS", "TOOL_RULE_OVERLAP", "rule_mark", "tool_situation"]

# Claude Code's built-in tools that act, and the verbs a condition would use for them.
ACTING_TOOLS: dict[str, str] = {
    "Bash": "run execute",
    "Edit": "edit change modify",
    "MultiEdit": "edit change modify",
    "Write": "write create edit",
    "NotebookEdit": "edit change notebook",
    "Task": "delegate subagent agent",
    "Agent": "delegate subagent agent",
}
# A tool call says less than a prompt: most of a condition's words must be in it.
TOOL_RULE_OVERLAP = 0.6
_INPUT_KEYS = ("command", "file_path", "notebook_path", "path", "description", "subagent_type")
_MAX_CHARS = 2000


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def tool_situation(tool_name: str, tool_input: Mapping[str, Any] | None) -> str | None:
    """The words of a tool call for rule matching, or None for a tool that only reads."""
    data = tool_input or {}
    if tool_name.startswith("mcp__"):
        # mcp__<server>__<tool>: the tool's own name says what it does.
        name = tool_name.rsplit("__", 1)[-1].replace("_", " ")
        return f"{name} {' '.join(_strings(data))}"[:_MAX_CHARS]
    verbs = ACTING_TOOLS.get(tool_name)
    if verbs is None:
        return None
    parts = [verbs]
    parts += [str(data[k]) for k in _INPUT_KEYS if isinstance(data.get(k), str)]
    if tool_name in ("Task", "Agent") and isinstance(data.get("prompt"), str):
        parts.append(str(data["prompt"])[:500])
    # Paths as words: "migrations/0012.sql" is about migrations.
    return " ".join(p.replace("/", " ").replace("_", " ") for p in parts)[:_MAX_CHARS]


def rule_mark(memory_id: int, content_hash: str, key: str | None) -> str:
    """What identifies a rule as shown in a session: its id and version (text and condition).

    A rule shown once is not shown again at the next matching call, unless it changed.
    """
    return f"{memory_id}:{content_hash[:12]}:{len(key or '')}"
