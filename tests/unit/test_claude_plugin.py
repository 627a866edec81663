"""The Claude Code plugin in the repository root, checked against Claude Code's documented schemas.

The schema facts below come from Claude Code's plugin documentation (code.claude.com/docs/en/
plugins-reference, plugins/manifest-reference, plugins/marketplace-reference and hooks):
- `.claude-plugin/plugin.json`: `name` is the only required field, kebab-case; `mcpServers` is
  a path or an inline map of server configs; when a manifest key is set, the matching default
  location is not read, which is why the server lives inline here. Claude Code 2.1.332 still
  reads a `.mcp.json` at the plugin root (and `claude plugin validate` lists it), so the
  checkout's project server for people working in it lives in `examples/mcp.json` instead.
- `hooks/hooks.json` is loaded from its default location; declaring the same file again under
  `hooks` in the manifest is reported as a duplicate, so the manifest must not.
- A hooks file is `{"hooks": {Event: [{"matcher"?: str, "hooks": [{"type": "command",
  "command": str, "timeout"?: seconds}]}]}}`; SessionStart matches its `source` (startup,
  resume, clear, compact), PreCompact its `trigger` (manual, auto), UserPromptSubmit takes none.
- `.claude-plugin/marketplace.json`: `name` (kebab-case, not a reserved name), `owner.name`,
  `plugins[]` with `name` and `source`; a relative source starts with `./` and is resolved from
  the marketplace root.
- `${CLAUDE_PLUGIN_ROOT}` is the plugin's directory (or Claude Code's cached copy of it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
MANIFEST_KEYS = {
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "commands",
    "agents",
    "skills",
    "hooks",
    "mcpServers",
    "outputStyles",
    "lspServers",
    "userConfig",
}
HOOK_EVENTS = {
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
}
# What each event's matcher is compared with; None: the event takes no matcher.
MATCHER_VALUES: dict[str, set[str] | None] = {
    "SessionStart": {"startup", "resume", "clear", "compact"},
    "PreCompact": {"manual", "auto"},
    "SessionEnd": {"clear", "logout", "prompt_input_exit", "other"},
    "UserPromptSubmit": None,
    "Stop": None,
}
RESERVED_MARKETPLACES = {
    "claude-code-marketplace",
    "claude-code-plugins",
    "claude-plugins-official",
    "anthropic-marketplace",
    "anthropic-plugins",
    "agent-skills",
    "life-sciences",
}
PLUGIN_ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"


def load(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(value, dict), f"{path}: the top level must be an object"
    return value


def plugin_path(plugin_root: Path, text: str) -> Path:
    """A `${CLAUDE_PLUGIN_ROOT}/...` path, resolved and required to stay inside the plugin."""
    assert text.startswith(PLUGIN_ROOT_VAR + "/"), f"{text!r} is not under {PLUGIN_ROOT_VAR}"
    path = (plugin_root / text[len(PLUGIN_ROOT_VAR) + 1 :]).resolve()
    assert path.is_relative_to(plugin_root.resolve()), f"{text!r} leaves the plugin root"
    return path


def command_executable(plugin_root: Path, command: str) -> Path:
    """The executable a hook command runs: the first word after leading VAR=value settings."""
    words = [w for w in shlex.split(command) if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
    assert words, f"empty command {command!r}"
    return plugin_path(plugin_root, words[0])


def validate_server(plugin_root: Path, name: str, server: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(server, dict):
        return [f"server {name}: must be an object"]
    if "command" not in server:
        return [f"server {name}: a stdio server needs `command`"]
    if not isinstance(server.get("args", []), list) or not all(
        isinstance(a, str) for a in server.get("args", [])
    ):
        problems.append(f"server {name}: `args` must be a list of strings")
    env = server.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        problems.append(f"server {name}: `env` must map names to strings")
    executable = plugin_path(plugin_root, server["command"])
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        problems.append(f"server {name}: {executable} is not an executable file")
    return problems


def validate_manifest(plugin_root: Path) -> list[str]:
    manifest = load(plugin_root / ".claude-plugin" / "plugin.json")
    problems = [f"unknown manifest key {k!r}" for k in manifest if k not in MANIFEST_KEYS]
    if not isinstance(manifest.get("name"), str) or not KEBAB.match(manifest["name"]):
        problems.append("`name` is required and must be kebab-case")
    if "version" in manifest and not SEMVER.match(str(manifest["version"])):
        problems.append("`version` must be semantic (MAJOR.MINOR.PATCH)")
    author = manifest.get("author")
    if author is not None and not (isinstance(author, dict) and "name" in author):
        problems.append("`author` must be an object with a `name`")
    if manifest.get("hooks") in ("./hooks/hooks.json", "hooks/hooks.json"):
        problems.append("hooks/hooks.json loads by default; naming it again is a duplicate")
    servers = manifest.get("mcpServers", {})
    if isinstance(servers, str):
        problems.append("expected the server inline (a path would also be allowed)")
    else:
        for name, server in servers.items():
            problems += validate_server(plugin_root, name, server)
    return problems


def validate_group(plugin_root: Path, event: str, group: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    matcher = group.get("matcher")
    allowed = MATCHER_VALUES.get(event, set())
    if matcher is not None and allowed is None:
        problems.append(f"{event}: takes no matcher")
    elif matcher is not None and allowed and not set(matcher.split("|")) <= allowed:
        problems.append(f"{event}: matcher {matcher!r} outside {sorted(allowed)}")
    hooks = group.get("hooks")
    if not isinstance(hooks, list) or not hooks:
        return [*problems, f"{event}: a group needs a non-empty `hooks` list"]
    for hook in hooks:
        if hook.get("type") != "command" or not isinstance(hook.get("command"), str):
            problems.append(f"{event}: entries must be type command with a command")
            continue
        timeout = hook.get("timeout")
        if timeout is not None and not (isinstance(timeout, int) and 0 < timeout <= 600):
            problems.append(f"{event}: timeout must be 1..600 seconds")
        executable = command_executable(plugin_root, hook["command"])
        if not (executable.is_file() and os.access(executable, os.X_OK)):
            problems.append(f"{event}: {executable} is not an executable file")
    return problems


def validate_hooks(plugin_root: Path) -> list[str]:
    config = load(plugin_root / "hooks" / "hooks.json")
    problems = [f"unknown key {k!r}" for k in config if k not in ("description", "hooks")]
    events = config.get("hooks")
    if not isinstance(events, dict):
        return [*problems, "`hooks` must be an object of events"]
    for event, groups in events.items():
        if event not in HOOK_EVENTS:
            problems.append(f"{event}: not a Claude Code hook event")
        elif not isinstance(groups, list) or not groups:
            problems.append(f"{event}: must be a non-empty list of matcher groups")
        else:
            for group in groups:
                problems += validate_group(plugin_root, event, group)
    return problems


def validate_marketplace(marketplace_root: Path) -> list[str]:
    market = load(marketplace_root / ".claude-plugin" / "marketplace.json")
    problems: list[str] = []
    name = market.get("name")
    if not isinstance(name, str) or not KEBAB.match(name) or name in RESERVED_MARKETPLACES:
        problems.append("`name` must be kebab-case and not reserved")
    owner = market.get("owner")
    if not (isinstance(owner, dict) and isinstance(owner.get("name"), str)):
        problems.append("`owner.name` is required")
    plugins = market.get("plugins")
    if not isinstance(plugins, list) or not plugins:
        return [*problems, "`plugins` must be a non-empty list"]
    for entry in plugins:
        source = entry.get("source")
        if not isinstance(entry.get("name"), str) or not isinstance(source, str):
            problems.append("each plugin needs `name` and `source`")
            continue
        if not source.startswith("./"):
            problems.append(f"{entry['name']}: a relative source starts with ./")
            continue
        root = (marketplace_root / source).resolve()
        manifest = root / ".claude-plugin" / "plugin.json"
        if not root.is_relative_to(marketplace_root.resolve()) or not manifest.is_file():
            problems.append(f"{entry['name']}: {source} holds no plugin")
        elif load(manifest)["name"] != entry["name"]:
            problems.append(f"{entry['name']}: the plugin's manifest has another name")
    return problems


def test_manifest_follows_the_documented_schema() -> None:
    assert validate_manifest(ROOT) == []


def test_hooks_follow_the_documented_schema() -> None:
    assert validate_hooks(ROOT) == []


def test_marketplace_follows_the_documented_schema() -> None:
    assert validate_marketplace(ROOT) == []


def test_plugin_registers_the_eight_events_and_the_server_with_git_scope() -> None:
    hooks = load(ROOT / "hooks" / "hooks.json")["hooks"]
    # SubagentStop runs `hook subagent-stop` (keep the result), never `hook stop`: Claude Code
    # runs /compact as a sub-agent, and the Stop hook there would ask mid-compaction.
    assert set(hooks) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
        "Stop",
        "PreToolUse",
        "SubagentStart",
        "SubagentStop",
    }
    assert (
        hooks["PreToolUse"][0]["matcher"]
        == "Bash|Edit|MultiEdit|Write|NotebookEdit|Task|Agent|mcp__.*"
    )
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    events = {
        "SessionStart": "session-start",
        "UserPromptSubmit": "user-prompt-submit",
        "PreCompact": "pre-compact",
        "SessionEnd": "session-end",
        "Stop": "stop",
        "PreToolUse": "pre-tool-use",
        "SubagentStart": "subagent-start",
        "SubagentStop": "subagent-stop",
    }
    for event, argument in events.items():
        (command,) = [h["command"] for g in hooks[event] for h in g["hooks"]]
        words = shlex.split(command)
        assert words[0] == "MEMSTRATA_PROJECT_SCOPE=git"
        assert words[2:] == ["hook", argument]
    server = load(ROOT / ".claude-plugin" / "plugin.json")["mcpServers"]["memstrata"]
    assert server["args"] == ["serve"]
    assert server["env"]["MEMSTRATA_PROJECT_SCOPE"] == "git"


def test_the_repository_project_server_stays_as_the_readme_documents() -> None:
    """The example project server is for people working in the checkout, not at the plugin's
    root (where Claude Code would read it as a second server of the plugin)."""
    assert not (ROOT / ".mcp.json").exists()
    project = load(ROOT / "examples" / "mcp.json")["mcpServers"]["memstrata"]
    assert project == {
        "command": ".venv/bin/memstrata",
        "args": ["serve"],
        "env": {"MEMSTRATA_DB": "./data/memory.db"},
    }


def test_validators_catch_what_claude_code_rejects(tmp_path: Path) -> None:
    """The validators are not vacuous: a broken plugin fails each of them."""
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / "hooks").mkdir()
    (tmp_path / ".claude-plugin" / "plugin.json").write_text(
        json.dumps(
            {
                "name": "Mem Strata",
                "hooks": "./hooks/hooks.json",
                "mcpServers": {"m": {"command": "${CLAUDE_PLUGIN_ROOT}/missing"}},
            }
        )
    )
    (tmp_path / "hooks" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "SessionBegin": [{"hooks": [{"type": "command", "command": "x"}]}],
                    "SessionStart": [
                        {
                            "matcher": "startup|boot",
                            "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/a"}],
                        }
                    ],
                    "UserPromptSubmit": [{"matcher": "x", "hooks": []}],
                }
            }
        )
    )
    (tmp_path / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps({"name": "claude-code-plugins", "plugins": [{"name": "p", "source": "../x"}]})
    )
    assert len(validate_manifest(tmp_path)) == 3
    assert len(validate_hooks(tmp_path)) == 5
    assert len(validate_marketplace(tmp_path)) == 3
    with pytest.raises(AssertionError, match="leaves the plugin root"):
        plugin_path(tmp_path, "${CLAUDE_PLUGIN_ROOT}/../../etc/passwd")


# --- the launcher: which memstrata the plugin runs --------------------------------------------


def stub(path: Path, name: str) -> Path:
    """An executable that prints who it is, its arguments and the project scope it was given."""
    path.mkdir(parents=True, exist_ok=True)
    exe = path / "memstrata"
    exe.write_text(f'#!/bin/sh\necho "{name} $* scope=${{MEMSTRATA_PROJECT_SCOPE:-unset}}"\n')
    exe.chmod(0o755)
    return exe


@pytest.fixture
def plugin_copy(tmp_path: Path) -> Path:
    """The plugin as Claude Code caches it: its files, without the checkout's .venv."""
    root = tmp_path / "plugin"
    for part in (".claude-plugin", "hooks", "scripts"):
        shutil.copytree(ROOT / part, root / part)
    return root


def launch(
    plugin_root: Path, *args: str, path: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": str(plugin_root.parent), **(extra_env or {})}
    return subprocess.run(
        [str(plugin_root / "scripts" / "memstrata-launch"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=30,
    )


SYSTEM_PATH = "/usr/bin:/bin"


@pytest.fixture(autouse=True)
def _no_memstrata_on_system_path() -> None:
    if shutil.which("memstrata", path=SYSTEM_PATH) or shutil.which("uvx", path=SYSTEM_PATH):
        pytest.skip("memstrata or uvx is installed system-wide; the fallbacks cannot be isolated")


def test_launcher_prefers_explicit_then_checkout_venv_then_path(
    plugin_copy: Path, tmp_path: Path
) -> None:
    on_path = stub(tmp_path / "pathbin", "path")
    search = f"{on_path.parent}:{SYSTEM_PATH}"
    assert launch(plugin_copy, "serve", path=search).stdout.startswith("path serve")
    stub(plugin_copy / ".venv" / "bin", "venv")
    assert launch(plugin_copy, "serve", path=search).stdout.startswith("venv serve")
    explicit = stub(tmp_path / "explicit", "explicit")
    done = launch(plugin_copy, "serve", path=search, extra_env={"MEMSTRATA_BIN": str(explicit)})
    assert done.stdout.startswith("explicit serve")


def test_launcher_without_memstrata_never_breaks_a_hook(plugin_copy: Path) -> None:
    hook = launch(plugin_copy, "hook", "session-start", path=SYSTEM_PATH)
    assert (hook.returncode, hook.stdout) == (0, "")
    assert "no memstrata executable found" in hook.stderr
    assert "pipx install memstrata" in hook.stderr
    serve = launch(plugin_copy, "serve", path=SYSTEM_PATH)
    assert serve.returncode == 127
    assert "no memstrata executable found" in serve.stderr


def test_hook_commands_run_as_claude_code_runs_them(plugin_copy: Path, tmp_path: Path) -> None:
    """Each hooks.json command through a shell with CLAUDE_PLUGIN_ROOT set, as Claude Code does."""
    on_path = stub(tmp_path / "pathbin", "path")
    hooks = load(plugin_copy / "hooks" / "hooks.json")["hooks"]
    seen = []
    for groups in hooks.values():
        for group in groups:
            for hook in group["hooks"]:
                done = subprocess.run(
                    ["sh", "-c", hook["command"]],
                    capture_output=True,
                    text=True,
                    env={
                        "PATH": f"{on_path.parent}:{SYSTEM_PATH}",
                        "CLAUDE_PLUGIN_ROOT": str(plugin_copy),
                    },
                    check=True,
                    timeout=30,
                )
                seen.append(done.stdout.strip())
    assert seen == [
        "path hook session-start scope=git",
        "path hook user-prompt-submit scope=git",
        "path hook pre-compact scope=git",
        "path hook session-end scope=git",
        "path hook stop scope=git",
        "path hook pre-tool-use scope=git",
        "path hook subagent-start scope=git",
        "path hook subagent-stop scope=git",
    ]
