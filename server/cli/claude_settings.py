"""memstrata's entries in Claude Code and Claude Desktop settings, as pure functions on JSON.

Where the entries go (Claude Code's settings and MCP documentation):
- Claude Code, user scope: the server under `mcpServers` in `~/.claude.json`, the hooks under
  `hooks` in `~/.claude/settings.json`.
- Claude Code, project scope: the server under `mcpServers` in `./.mcp.json`, the hooks under
  `hooks` in `./.claude/settings.json`.
- Claude Desktop: the server under `mcpServers` in `claude_desktop_config.json` (no hooks).

A hooks value is `{Event: [{"matcher"?: str, "hooks": [{"type": "command", "command": str,
"timeout"?: seconds}]}]}`. An entry is ours only when it has the exact shape setup writes: a
hook whose command is, word for word and quoted as hook_command quotes it, `[MEMSTRATA_*=value
...] /abs/path/memstrata hook <the argument of the event it is under>`; a server named
`memstrata` that is `{"command": "/abs/path/memstrata", "args": ["serve"], "env"?: {MEMSTRATA_*:
str}}` (with `"type": "stdio"` allowed, as Claude Code may add it). Anything else, a command
that merely mentions `memstrata hook` or a `memstrata` server running another program, is the
person's own: merging refuses to overwrite it and removing leaves it. Every function returns a
new document; the key order of everything else is kept.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "HOOK_EVENTS",
    "SERVER_NAME",
    "Document",
    "SettingsShapeError",
    "command_executable",
    "desktop_config_path",
    "foreign_server",
    "has_server",
    "hook_command",
    "hook_groups",
    "is_our_hook",
    "is_our_server",
    "merge_hooks",
    "merge_server",
    "our_hook_commands",
    "remove_hooks",
    "remove_server",
    "server_entry",
]

Document = dict[str, Any]
SERVER_NAME = "memstrata"


@dataclass(frozen=True)
class HookEvent:
    """One Claude Code event memstrata hooks into, with how it is registered."""

    name: str
    argument: str
    matcher: str | None
    timeout: int


# The tools whose calls a procedural rule can be about (memory_core.domain.tool_calls).
TOOL_MATCHER = "Bash|Edit|MultiEdit|Write|NotebookEdit|Task|Agent|mcp__.*"

# Timeouts in seconds: generous ceilings, the hook command keeps its own shorter budget. SessionEnd
# hooks share a short exit budget in Claude Code that a per-hook timeout raises.
HOOK_EVENTS: tuple[HookEvent, ...] = (
    HookEvent("SessionStart", "session-start", "startup|resume|clear|compact", 10),
    HookEvent("UserPromptSubmit", "user-prompt-submit", None, 10),
    HookEvent("PreCompact", "pre-compact", None, 60),
    HookEvent("SessionEnd", "session-end", None, 30),
    HookEvent("Stop", "stop", None, 10),
    # Only the tools that act: a rule is never about reading a file.
    HookEvent("PreToolUse", "pre-tool-use", TOOL_MATCHER, 10),
    HookEvent("SubagentStart", "subagent-start", None, 10),
    HookEvent("SubagentStop", "subagent-stop", None, 30),
)

_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OUR_ENV = re.compile(r"MEMSTRATA_[A-Z0-9_]+")
_ARGUMENTS = {event.argument: event for event in HOOK_EVENTS}


class SettingsShapeError(ValueError):
    """A settings document whose shape memstrata will not edit (it names the key)."""


def hook_command(command: list[str], event: HookEvent, env: Mapping[str, str]) -> str:
    """The shell command of one hook: `VAR=value ... /abs/memstrata hook <event>`."""
    words = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    words += [shlex.quote(w) for w in command]
    return " ".join([*words, "hook", event.argument])


def hook_groups(command: list[str], env: Mapping[str, str]) -> dict[str, Document]:
    """One matcher group per event, holding memstrata's hook for it."""
    groups: dict[str, Document] = {}
    for event in HOOK_EVENTS:
        group: Document = {} if event.matcher is None else {"matcher": event.matcher}
        group["hooks"] = [
            {
                "type": "command",
                "command": hook_command(command, event, env),
                "timeout": event.timeout,
            }
        ]
        groups[event.name] = group
    return groups


def server_entry(command: list[str], env: Mapping[str, str]) -> Document:
    """The stdio server entry (`command`, `args`, `env`) that runs `memstrata serve`."""
    entry: Document = {"command": command[0], "args": [*command[1:], "serve"]}
    if env:
        entry["env"] = dict(env)
    return entry


def _is_our_program(word: str) -> bool:
    """An absolute path to a `memstrata` console script, as resolve_command registers it."""
    return Path(word).is_absolute() and Path(word).name == SERVER_NAME


def _our_env(env: Any) -> bool:
    return isinstance(env, dict) and all(
        isinstance(k, str) and _OUR_ENV.fullmatch(k) and isinstance(v, str) for k, v in env.items()
    )


def is_our_hook(hook: Any, event: str) -> bool:
    """True for exactly the hook entry setup writes for `event` (see the module docstring)."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    command = hook.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    env: dict[str, str] = {}
    while words and _ENV_WORD.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if len(words) != 3 or words[1] != "hook" or not _is_our_program(words[0]):
        return False
    registered = _ARGUMENTS.get(words[2])
    if registered is None or registered.name != event or not _our_env(env):
        return False
    # Word for word is not enough: `$(...)` in a value survives shlex; our quoting would not.
    return hook_command([words[0]], registered, env) == command


def is_our_server(entry: Any) -> bool:
    """True for exactly the server entry setup writes (see the module docstring)."""
    return (
        isinstance(entry, dict)
        and set(entry) <= {"type", "command", "args", "env"}
        and entry.get("type", "stdio") == "stdio"
        and isinstance(entry.get("command"), str)
        and _is_our_program(entry["command"])
        and entry.get("args") == ["serve"]
        and _our_env(entry.get("env", {}))
    )


def _describe(entry: Any) -> str:
    """What a server entry runs, in a few words, for a message."""
    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        args = entry.get("args")
        words = [entry["command"], *(str(a) for a in (args if isinstance(args, list) else []))]
        return "runs `" + shlex.join(words)[:120] + "`"
    if isinstance(entry, dict) and isinstance(entry.get("url"), str):
        return f"connects to {entry['url'][:120]}"
    return "is not a memstrata command"


def _object(document: Document, key: str, where: str) -> Document:
    value = document.get(key, {})
    if not isinstance(value, dict):
        raise SettingsShapeError(f"`{key}` in {where} is not a JSON object")
    return value


def merge_server(document: Document, entry: Document, where: str) -> Document:
    """Set `mcpServers.memstrata` to entry, in place of an earlier one of ours, keeping the rest.

    A `memstrata` server of another shape (a hand-made HTTP entry, `npx some-proxy`) is the
    person's own: it is refused, not overwritten.
    """
    result = copy.deepcopy(document)
    servers = _object(result, "mcpServers", where)
    existing = servers.get(SERVER_NAME)
    if existing is not None and not is_our_server(existing):
        raise SettingsShapeError(
            f"`mcpServers.{SERVER_NAME}` in {where} is a server setup did not write (it "
            f"{_describe(existing)}); setup leaves it alone: remove or rename it to register "
            "memstrata there"
        )
    servers[SERVER_NAME] = entry
    result["mcpServers"] = servers
    return result


def has_server(document: Document) -> bool:
    """True when `mcpServers.memstrata` is there and is the entry setup writes."""
    servers = document.get("mcpServers")
    return isinstance(servers, dict) and is_our_server(servers.get(SERVER_NAME))


def foreign_server(document: Document) -> str | None:
    """What a `mcpServers.memstrata` that setup did not write runs, or None when there is none."""
    servers = document.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return None
    entry = servers[SERVER_NAME]
    return None if is_our_server(entry) else _describe(entry)


def remove_server(document: Document, where: str) -> Document:
    """Drop our `mcpServers.memstrata` (and `mcpServers` if that leaves it empty)."""
    result = copy.deepcopy(document)
    servers = _object(result, "mcpServers", where)
    if is_our_server(servers.get(SERVER_NAME)):
        del servers[SERVER_NAME]
        if not servers:
            del result["mcpServers"]
    return result


def _groups(hooks: Document, event: str, where: str) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise SettingsShapeError(f"`hooks.{event}` in {where} is not a JSON list")
    return groups


def _without_ours(groups: list[Any], event: str) -> list[Any]:
    """The groups minus our hook entries; a group left with no hooks is dropped."""
    kept: list[Any] = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        hooks = [h for h in group["hooks"] if not is_our_hook(h, event)]
        if len(hooks) == len(group["hooks"]):
            kept.append(group)
        elif hooks:
            kept.append({**group, "hooks": hooks})
    return kept


def _holds_ours(group: Any, event: str) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(is_our_hook(h, event) for h in hooks)


def merge_hooks(document: Document, groups: Mapping[str, Document], where: str) -> Document:
    """Put our group under each event: where our hook was before, else at the end of the list.

    Other hooks of the same event stay where they are, so merging twice changes nothing.
    """
    result = copy.deepcopy(document)
    hooks = _object(result, "hooks", where)
    for event, group in groups.items():
        existing = _groups(hooks, event, where)
        position = next((i for i, g in enumerate(existing) if _holds_ours(g, event)), None)
        if position is None:
            hooks[event] = [*existing, copy.deepcopy(group)]
            continue
        before = _without_ours(existing[:position], event)
        after = _without_ours(existing[position + 1 :], event)
        others = _without_ours([existing[position]], event)
        hooks[event] = [*before, *others, copy.deepcopy(group), *after]
    result["hooks"] = hooks
    return result


def remove_hooks(document: Document, where: str) -> Document:
    """Drop every hook of ours; events (and `hooks`) left empty by that go too."""
    result = copy.deepcopy(document)
    if "hooks" not in result:
        return result
    hooks = _object(result, "hooks", where)
    for event in list(hooks):
        groups = _groups(hooks, event, where)
        if not any(_holds_ours(g, event) for g in groups):
            continue
        kept = _without_ours(groups, event)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def our_hook_commands(document: Document) -> dict[str, list[str]]:
    """Event name -> the commands of our hooks registered for it (shape errors read as none)."""
    hooks = document.get("hooks")
    found: dict[str, list[str]] = {}
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                commands = [h["command"] for h in group["hooks"] if is_our_hook(h, event)]
                if commands:
                    found.setdefault(event, []).extend(commands)
    return found


def command_executable(command: str) -> str | None:
    """The program a hook's shell command runs: its first word after `VAR=value` settings."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    programs = [w for w in words if not _ENV_WORD.match(w)]
    return programs[0] if programs else None


def desktop_config_path(home: Path, platform: str, environ: Mapping[str, str]) -> Path:
    """Where Claude Desktop keeps claude_desktop_config.json on this platform."""
    name = "claude_desktop_config.json"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / name
    if platform.startswith("win"):
        appdata = environ.get("APPDATA")
        base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        return base / "Claude" / name
    config = environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else home / ".config") / "Claude" / name
