"""memstrata's entries in Claude Code and Claude Desktop settings, as pure functions on JSON.

Where the entries go (Claude Code's settings and MCP documentation):
- Claude Code, user scope: the server under `mcpServers` in `~/.claude.json`, the hooks under
  `hooks` in `~/.claude/settings.json`.
- Claude Code, project scope: the server under `mcpServers` in `./.mcp.json`, the hooks under
  `hooks` in `./.claude/settings.json`.
- Claude Desktop: the server under `mcpServers` in `claude_desktop_config.json` (no hooks).

A hooks value is `{Event: [{"matcher"?: str, "hooks": [{"type": "command", "command": str,
"timeout"?: seconds}]}]}`. Our hook entries are recognised by their command (it runs
`memstrata hook ...`), our server by its name `memstrata` and a command that runs memstrata, so
merging again replaces them in place and removing takes out exactly them. Every function returns
a new document; the key order of everything else is kept.
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


# Timeouts in seconds: generous ceilings, the hook command keeps its own shorter budget. SessionEnd
# hooks share a short exit budget in Claude Code that a per-hook timeout raises.
HOOK_EVENTS: tuple[HookEvent, ...] = (
    HookEvent("SessionStart", "session-start", "startup|resume|clear|compact", 10),
    HookEvent("UserPromptSubmit", "user-prompt-submit", None, 10),
    HookEvent("PreCompact", "pre-compact", None, 60),
    HookEvent("SessionEnd", "session-end", None, 30),
)

# `memstrata hook`, `'/path/to/memstrata' hook`, `.../memstrata-launch" hook`, `-m server hook`.
_OUR_HOOK = re.compile(r"(memstrata(-launch)?|-m server)['\"]?\s+hook(\s|$)")
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


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


def is_our_hook(hook: Any) -> bool:
    """True for a hook entry whose command runs `memstrata hook ...`."""
    return (
        isinstance(hook, dict)
        and isinstance(hook.get("command"), str)
        and bool(_OUR_HOOK.search(hook["command"]))
    )


def is_our_server(entry: Any) -> bool:
    """True for a server entry that runs memstrata (its command, or an argument, names it)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    words = [entry["command"], *[a for a in entry.get("args", []) if isinstance(a, str)]]
    return any("memstrata" in Path(w).name or w == "server" for w in words)


def _object(document: Document, key: str, where: str) -> Document:
    value = document.get(key, {})
    if not isinstance(value, dict):
        raise SettingsShapeError(f"`{key}` in {where} is not a JSON object")
    return value


def merge_server(document: Document, entry: Document, where: str) -> Document:
    """Set `mcpServers.memstrata` to entry, in place of an earlier one of ours, keeping the rest.

    A `memstrata` server that runs no memstrata command (say, a hand-made HTTP entry) is the
    person's own: it is refused, not overwritten.
    """
    result = copy.deepcopy(document)
    servers = _object(result, "mcpServers", where)
    existing = servers.get(SERVER_NAME)
    if existing is not None and not is_our_server(existing):
        raise SettingsShapeError(
            f"`mcpServers.{SERVER_NAME}` in {where} is a server setup did not write (it runs no "
            "memstrata command); remove or rename it"
        )
    servers[SERVER_NAME] = entry
    result["mcpServers"] = servers
    return result


def has_server(document: Document) -> bool:
    """True when `mcpServers.memstrata` is there and runs memstrata."""
    servers = document.get("mcpServers")
    return isinstance(servers, dict) and is_our_server(servers.get(SERVER_NAME))


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


def _without_ours(groups: list[Any]) -> list[Any]:
    """The groups minus our hook entries; a group left with no hooks is dropped."""
    kept: list[Any] = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        hooks = [h for h in group["hooks"] if not is_our_hook(h)]
        if len(hooks) == len(group["hooks"]):
            kept.append(group)
        elif hooks:
            kept.append({**group, "hooks": hooks})
    return kept


def _holds_ours(group: Any) -> bool:
    return isinstance(group, dict) and any(is_our_hook(h) for h in group.get("hooks") or [])


def merge_hooks(document: Document, groups: Mapping[str, Document], where: str) -> Document:
    """Put our group under each event: where our hook was before, else at the end of the list.

    Other hooks of the same event stay where they are, so merging twice changes nothing.
    """
    result = copy.deepcopy(document)
    hooks = _object(result, "hooks", where)
    for event, group in groups.items():
        existing = _groups(hooks, event, where)
        position = next((i for i, g in enumerate(existing) if _holds_ours(g)), None)
        if position is None:
            hooks[event] = [*existing, copy.deepcopy(group)]
            continue
        before = _without_ours(existing[:position])
        after = _without_ours(existing[position + 1 :])
        others = _without_ours([existing[position]])
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
        if not any(_holds_ours(g) for g in groups):
            continue
        kept = _without_ours(groups)
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
                commands = [h["command"] for h in group["hooks"] if is_our_hook(h)]
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
