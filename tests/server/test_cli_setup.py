"""`memstrata setup`: merging into real settings files under a temporary HOME.

The settings files start with other servers, other hooks (on the same events too) and unknown
keys, as a person's files do. After setup they hold memstrata's entries as well and a backup of
each changed file; a second run changes nothing; --dry-run writes nothing; --uninstall gives the
original documents back (same JSON, key order included, in the file's own indentation).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from server.cli.claude_settings import (
    HOOK_EVENTS,
    TOOL_MATCHER,
    SettingsShapeError,
    command_executable,
    hook_groups,
    merge_hooks,
    merge_server,
    our_hook_commands,
    remove_hooks,
    remove_server,
    server_entry,
)
from server.cli.commands import main
from server.cli.settings_file import MAX_BYTES

Run = tuple[int, str, str]
USER_CLAUDE_JSON: dict[str, Any] = {
    "numStartups": 12,
    "theme": "dark",
    "mcpServers": {
        "github": {"type": "http", "url": "https://api.example.com/mcp"},
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
    },
    "projects": {"/home/me/app": {"mcpServers": {}, "allowedTools": []}},
}
USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}],
            }
        ],
    },
    "permissions": {"allow": ["Bash(git status)"]},
    "enabledPlugins": {"other@market": True},
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=4) + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.memstrata-backup-*"))


@pytest.fixture
def fake_memstrata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The running memstrata: a stub that echoes what it is asked and its project scope."""
    exe = tmp_path / "install dir" / "bin" / "memstrata"
    exe.parent.mkdir(parents=True)
    exe.write_text('#!/bin/sh\necho "ran $* scope=${MEMSTRATA_PROJECT_SCOPE:-unset}"\n')
    exe.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(exe)])
    return exe


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_memstrata: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("MEMSTRATA_DB", raising=False)
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")
    monkeypatch.chdir(tmp_path)
    return home


# --- pure merge functions ----------------------------------------------------------------------


COMMAND = ["/opt/ms/bin/memstrata"]
ENV = {"MEMSTRATA_PROJECT_SCOPE": "git"}


def test_merge_hooks_adds_one_group_per_event_and_keeps_the_others() -> None:
    merged = merge_hooks(USER_SETTINGS, hook_groups(COMMAND, ENV), "settings.json")
    assert list(merged) == list(USER_SETTINGS)  # key order kept
    hooks = merged["hooks"]
    assert list(hooks) == [
        "SessionStart",
        "PreToolUse",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
        "Stop",
        "SubagentStart",
        "SubagentStop",
    ]
    assert hooks["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    ours = hooks["SessionStart"][1]
    assert ours["matcher"] == "startup|resume|clear|compact"
    assert ours["hooks"] == [
        {
            "type": "command",
            "command": "MEMSTRATA_PROJECT_SCOPE=git /opt/ms/bin/memstrata hook session-start",
            "timeout": 10,
        }
    ]
    # The user's own PreToolUse group is kept, memstrata's added after it.
    assert hooks["PreToolUse"][:-1] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert hooks["PreToolUse"][-1]["matcher"] == TOOL_MATCHER
    assert "matcher" not in hooks["UserPromptSubmit"][0]
    assert USER_SETTINGS["hooks"]["SessionStart"] == [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
    ], "the input is not modified"


def test_merge_hooks_twice_or_with_a_new_path_replaces_in_place() -> None:
    once = merge_hooks(USER_SETTINGS, hook_groups(COMMAND, ENV), "s")
    assert merge_hooks(once, hook_groups(COMMAND, ENV), "s") == once
    # A hook a person added after ours stays after ours when memstrata moves.
    once["hooks"]["SessionEnd"].append({"hooks": [{"type": "command", "command": "echo bye"}]})
    moved = merge_hooks(once, hook_groups(["/new/memstrata"], ENV), "s")
    assert [g["hooks"][0]["command"] for g in moved["hooks"]["SessionEnd"]] == [
        "MEMSTRATA_PROJECT_SCOPE=git /new/memstrata hook session-end",
        "echo bye",
    ]
    assert sum(len(c) for c in our_hook_commands(moved).values()) == len(HOOK_EVENTS)


def test_merge_hooks_splits_ours_out_of_a_shared_group() -> None:
    shared = {
        "hooks": {
            "PreCompact": [
                {
                    "hooks": [
                        {"type": "command", "command": "/old/bin/memstrata hook pre-compact"},
                        {"type": "command", "command": "echo compacting"},
                    ]
                }
            ]
        }
    }
    merged = merge_hooks(shared, hook_groups(COMMAND, ENV), "s")
    groups = merged["hooks"]["PreCompact"]
    assert [h["command"] for g in groups for h in g["hooks"]] == [
        "echo compacting",
        "MEMSTRATA_PROJECT_SCOPE=git /opt/ms/bin/memstrata hook pre-compact",
    ]
    assert remove_hooks(merged, "s") == {
        "hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "echo compacting"}]}]}
    }


def test_remove_hooks_gives_the_original_back() -> None:
    merged = merge_hooks(USER_SETTINGS, hook_groups(COMMAND, ENV), "s")
    assert remove_hooks(merged, "s") == USER_SETTINGS
    assert remove_hooks(merge_hooks({}, hook_groups(COMMAND, ENV), "s"), "s") == {}


def test_quoted_paths_and_env_are_recognised_and_parse_back() -> None:
    env = {"MEMSTRATA_PROJECT_SCOPE": "git", "MEMSTRATA_DB": "/data/my memory.db"}
    groups = hook_groups(["/Users/me/Application Support/memstrata"], env)
    command = groups["SessionStart"]["hooks"][0]["command"]
    assert command_executable(command) == "/Users/me/Application Support/memstrata"
    assert our_hook_commands({"hooks": {e: [g] for e, g in groups.items()}}) == {
        e: [groups[e]["hooks"][0]["command"]] for e in groups
    }


def test_merge_server_keeps_other_servers_and_removal_spares_a_foreign_memstrata() -> None:
    entry = server_entry(COMMAND, ENV)
    assert entry == {"command": COMMAND[0], "args": ["serve"], "env": ENV}
    merged = merge_server(USER_CLAUDE_JSON, entry, "c")
    assert list(merged["mcpServers"]) == ["github", "files", "memstrata"]
    assert remove_server(merged, "c") == USER_CLAUDE_JSON
    foreign = {"mcpServers": {"memstrata": {"type": "http", "url": "http://10.0.0.2:8765/mcp"}}}
    assert remove_server(foreign, "c") == foreign
    with pytest.raises(SettingsShapeError, match="is a server setup did not write"):
        merge_server(foreign, entry, "c")
    earlier = {"type": "stdio", "command": "/old/bin/memstrata", "args": ["serve"], "env": {}}
    assert merge_server({"mcpServers": {"memstrata": earlier}}, entry, "c") == {
        "mcpServers": {"memstrata": entry}
    }


def test_unexpected_shapes_are_refused_with_the_key() -> None:
    with pytest.raises(SettingsShapeError, match="`hooks` in s"):
        merge_hooks({"hooks": []}, hook_groups(COMMAND, ENV), "s")
    with pytest.raises(SettingsShapeError, match=r"`hooks\.SessionStart` in s"):
        merge_hooks({"hooks": {"SessionStart": {}}}, hook_groups(COMMAND, ENV), "s")
    with pytest.raises(SettingsShapeError, match="`mcpServers` in c"):
        merge_server({"mcpServers": ["x"]}, server_entry(COMMAND, ENV), "c")


# --- the command on real files -----------------------------------------------------------------


def test_claude_code_user_scope_merges_backs_up_and_is_idempotent(
    capsys: pytest.CaptureFixture[str], home: Path, fake_memstrata: Path
) -> None:
    claude_json, settings = home / ".claude.json", home / ".claude" / "settings.json"
    write_json(claude_json, USER_CLAUDE_JSON)
    write_json(settings, USER_SETTINGS)
    originals = {p: p.read_text() for p in (claude_json, settings)}

    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert (code, err) == (0, "")
    assert f"memstrata registered in {claude_json} (backup: " in out
    assert "restart Claude Code" in out
    server = read_json(claude_json)
    assert list(server) == list(USER_CLAUDE_JSON)
    assert server["mcpServers"]["memstrata"] == {
        "command": str(fake_memstrata),
        "args": ["serve"],
        # The hooks are registered too: the server's instructions are written for that.
        "env": {"MEMSTRATA_PROJECT_SCOPE": "git", "MEMSTRATA_CLIENT": "claude-code-hooks"},
    }
    assert {k: v for k, v in server["mcpServers"].items() if k != "memstrata"} == USER_CLAUDE_JSON[
        "mcpServers"
    ]
    assert set(our_hook_commands(read_json(settings))) == {e.name for e in HOOK_EVENTS}
    for path in (claude_json, settings):
        (backup,) = backups(path)
        assert backup.read_text() == originals[path]

    merged = {p: p.read_text() for p in (claude_json, settings)}
    code, out, _ = run_cli(capsys, "setup", "claude-code")
    assert code == 0
    assert out == f"unchanged: {claude_json}\nunchanged: {settings}\n"
    assert {p: p.read_text() for p in merged} == merged
    assert all(len(backups(p)) == 1 for p in merged)

    code, out, _ = run_cli(capsys, "setup", "claude-code", "--uninstall")
    assert code == 0
    assert {p: p.read_text() for p in originals} == originals, "same text: 4-space indent kept"
    assert read_json(claude_json) == USER_CLAUDE_JSON
    assert read_json(settings) == USER_SETTINGS
    assert list(read_json(settings)["hooks"]) == list(USER_SETTINGS["hooks"])


def test_the_registered_hook_commands_run_the_registered_memstrata(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """Each command as Claude Code runs it (through a shell) reaches memstrata with git scope."""
    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    commands = our_hook_commands(read_json(home / ".claude" / "settings.json"))
    outputs = {
        event: subprocess.run(
            ["sh", "-c", command],
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": "/usr/bin:/bin"},
        ).stdout.strip()
        for event, (command,) in commands.items()
    }
    assert outputs == {
        "SessionStart": "ran hook session-start scope=git",
        "UserPromptSubmit": "ran hook user-prompt-submit scope=git",
        "PreCompact": "ran hook pre-compact scope=git",
        "SessionEnd": "ran hook session-end scope=git",
        "Stop": "ran hook stop scope=git",
        "PreToolUse": "ran hook pre-tool-use scope=git",
        "SubagentStart": "ran hook subagent-start scope=git",
        "SubagentStop": "ran hook subagent-stop scope=git",
    }


def test_dry_run_prints_a_diff_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    settings = home / ".claude" / "settings.json"
    write_json(settings, USER_SETTINGS)
    before = settings.read_text()
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--dry-run")
    assert code == 0
    assert f"--- /dev/null\n+++ {home / '.claude.json'}" in out  # a file that would be created
    assert f"--- {settings}\n+++ {settings}" in out
    added = [line for line in out.splitlines() if line.startswith("+ ")]
    assert sum('"command": "MEMSTRATA_PROJECT_SCOPE=git ' in line for line in added) == 8
    assert not [line for line in out.splitlines() if line.startswith("- ")], "nothing removed"
    assert settings.read_text() == before
    assert not (home / ".claude.json").exists()
    assert backups(settings) == []


def test_project_scope_writes_the_project_files(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "app"
    write_json(project / ".mcp.json", {"mcpServers": {"db": {"command": "db-mcp"}}})
    monkeypatch.chdir(project)
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--scope", "project")
    assert code == 0
    assert f"{project / '.claude' / 'settings.json'} (created)" in out
    assert list(read_json(project / ".mcp.json")["mcpServers"]) == ["db", "memstrata"]
    assert set(our_hook_commands(read_json(project / ".claude" / "settings.json"))) == {
        e.name for e in HOOK_EVENTS
    }
    assert not (home / ".claude.json").exists()
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--scope", "project", "--uninstall")
    assert code == 0
    assert read_json(project / ".mcp.json") == {"mcpServers": {"db": {"command": "db-mcp"}}}
    assert f"{project / '.claude' / 'settings.json'} (deleted: setup had created it)" in out
    assert not (project / ".claude").exists(), "created by setup: gone again"


def test_claude_desktop_registers_the_server_without_git_scope(
    capsys: pytest.CaptureFixture[str],
    home: Path,
    fake_memstrata: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("MEMSTRATA_DB", "data/memory.db")  # relative: written as absolute
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    original = {"globalShortcut": "Ctrl+Space", "mcpServers": {"files": {"command": "npx"}}}
    write_json(config, original)
    code, _, _ = run_cli(capsys, "setup", "claude-desktop")
    assert code == 0
    assert read_json(config)["mcpServers"]["memstrata"] == {
        "command": str(fake_memstrata),
        "args": ["serve"],
        "env": {"MEMSTRATA_DB": str(tmp_path / "data" / "memory.db")},
    }
    assert len(backups(config)) == 1
    assert run_cli(capsys, "setup", "claude-desktop", "--uninstall")[0] == 0
    assert read_json(config) == original


def test_a_malformed_settings_file_is_refused_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    claude_json, settings = home / ".claude.json", home / ".claude" / "settings.json"
    write_json(claude_json, USER_CLAUDE_JSON)
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"SessionStart": [}\n')
    before = {p: p.read_text() for p in (claude_json, settings)}
    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert code == 1
    assert out == ""
    assert f"{settings} is not valid JSON (line 1, column" in err
    assert "Nothing was changed" in err
    assert {p: p.read_text() for p in before} == before
    assert backups(claude_json) == backups(settings) == []


def test_a_settings_file_of_the_wrong_shape_is_refused(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    write_json(home / ".claude" / "settings.json", {"hooks": ["not", "events"]})
    code, _, err = run_cli(capsys, "setup", "claude-code")
    assert code == 1
    assert "`hooks` in" in err and "is not a JSON object" in err
    write_json(home / ".claude" / "settings.json", {})
    hand_made = {"mcpServers": {"memstrata": {"type": "http", "url": "http://nas:8765/mcp"}}}
    write_json(home / ".claude.json", hand_made)
    code, _, err = run_cli(capsys, "setup", "claude-code")
    assert code == 1
    assert "`mcpServers.memstrata` in" in err and "remove or rename it" in err
    assert read_json(home / ".claude.json") == hand_made
    write_json(home / ".claude" / "settings.json", ["a list"])
    code, _, err = run_cli(capsys, "setup", "claude-code", "--uninstall")
    assert code == 1
    assert "does not hold a JSON object" in err


def test_setup_without_a_findable_memstrata_says_so(
    capsys: pytest.CaptureFixture[str], home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "argv", ["/nowhere/python-script"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "empty" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run_cli(capsys, "setup", "claude-code")
    assert code == 1
    assert "cannot find the memstrata executable" in err
    assert not (home / ".claude.json").exists()


def test_setup_needs_a_target(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    code, _, err = run_cli(capsys, "setup")
    assert code == 2
    assert "claude-code" in err


# --- doctor: is memstrata registered in Claude Code? -------------------------------------------


def claude_checks(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, str]]]:
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"] if c["name"].startswith("claude")}
    return code, checks


@pytest.fixture
def doctor_env(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "doctor.db"))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    return home


def test_doctor_reports_registration_without_failing_the_install(
    capsys: pytest.CaptureFixture[str], doctor_env: Path, fake_memstrata: Path
) -> None:
    code, checks = claude_checks(capsys)
    assert code == 0
    assert checks["claude code (user)"]["status"] == "ok"
    assert checks["claude code (user)"]["detail"].startswith("not registered (optional")
    assert checks["claude code (project)"]["status"] == "ok"

    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    code, checks = claude_checks(capsys)
    assert code == 0
    assert checks["claude code (user)"] == {
        "name": "claude code (user)",
        "status": "ok",
        "detail": f"server and 8 hooks registered: {fake_memstrata}",
        "fix": None,
    }

    fake_memstrata.unlink()  # e.g. the virtualenv it was registered from was deleted
    code, checks = claude_checks(capsys)
    assert code == 0, "a broken registration is a warning about Claude Code, not the install"
    user = checks["claude code (user)"]
    assert user["status"] == "warn"
    assert user["detail"] == f"registered command: {fake_memstrata} does not exist"
    assert user["fix"].startswith("memstrata setup claude-code ")


def test_doctor_warns_about_a_partial_or_unreadable_registration(
    capsys: pytest.CaptureFixture[str], doctor_env: Path
) -> None:
    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    settings = doctor_env / ".claude" / "settings.json"
    document = read_json(settings)
    del document["hooks"]["PreCompact"]
    write_json(settings, document)
    _, checks = claude_checks(capsys)
    assert checks["claude code (user)"]["status"] == "warn"
    assert (
        checks["claude code (user)"]["detail"] == "partly registered: missing hooks for PreCompact"
    )

    settings.write_text("{oops")
    _, checks = claude_checks(capsys)
    assert checks["claude code (user)"]["status"] == "warn"
    assert "cannot be read as JSON" in checks["claude code (user)"]["detail"]


def test_doctor_counts_the_plugin_as_registered(
    capsys: pytest.CaptureFixture[str], doctor_env: Path
) -> None:
    write_json(
        doctor_env / ".claude" / "settings.json",
        {"enabledPlugins": {"memstrata@memstrata": True, "other@x": True}},
    )
    _, checks = claude_checks(capsys)
    assert checks["claude code (user)"] == {
        "name": "claude code (user)",
        "status": "ok",
        "detail": "plugin memstrata@memstrata enabled",
        "fix": None,
    }


@pytest.mark.e2e
def test_the_installed_console_script_registers_itself(tmp_path: Path) -> None:
    """`memstrata setup` as a person runs it: the command written is that console script."""
    script = Path(sys.executable).parent / "memstrata"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "MEMSTRATA_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [str(script), "setup", "claude-code"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    server = read_json(tmp_path / ".claude.json")["mcpServers"]["memstrata"]
    assert server["command"] == str(script)
    commands = our_hook_commands(read_json(tmp_path / ".claude" / "settings.json"))
    assert {command_executable(c) for (c,) in commands.values()} == {str(script)}


# --- only its own entries ----------------------------------------------------------------------


OURS = "MEMSTRATA_PROJECT_SCOPE=git /opt/ms/bin/memstrata hook session-start"


@pytest.mark.parametrize(
    "command",
    [
        'echo "memstrata hook session-start" >> ~/log',
        "python -m server hook session-start",
        "memstrata hook session-start",  # not the absolute path setup writes
        "/opt/ms/bin/memstrata-launch hook session-start",
        "/opt/ms/bin/memstrata hook session-start --verbose",
        f"{OURS} && curl https://example.com",
        f"{OURS}; rm -rf ~/notes",
        "FOO=1 /opt/ms/bin/memstrata hook session-start",
        "MEMSTRATA_DB=$(id) /opt/ms/bin/memstrata hook session-start",
        "/opt/ms/bin/memstrata hook user-prompt-submit",  # another event's command
        "/opt/ms/bin/memstrata  hook session-start",  # not as setup spaces it
    ],
)
def test_a_hook_that_only_mentions_memstrata_is_not_ours(command: str) -> None:
    theirs = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}}
    assert remove_hooks(theirs, "s") == theirs
    merged = merge_hooks(theirs, hook_groups(COMMAND, ENV), "s")
    assert merged["hooks"]["SessionStart"][0] == theirs["hooks"]["SessionStart"][0]
    assert remove_hooks(merged, "s") == theirs


def test_the_hooks_setup_writes_are_recognised_with_any_path_and_memstrata_env() -> None:
    for command, env in (
        (COMMAND, ENV),
        (["/Users/me/Application Support/bin/memstrata"], {}),
        (COMMAND, {**ENV, "MEMSTRATA_DB": "/data/it's here.db"}),
    ):
        merged = merge_hooks({}, hook_groups(command, env), "s")
        assert remove_hooks(merged, "s") == {}
    typed = {"hooks": {"SessionStart": [{"hooks": [{"type": "prompt", "command": OURS}]}]}}
    assert remove_hooks(typed, "s") == typed


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "npx", "args": ["@acme/memstrata-http-proxy"]},
        {"command": "uvx", "args": ["--from", "/src/memstrata", "memstrata", "serve"]},
        {"command": "memstrata", "args": ["serve"]},  # not an absolute path
        {"command": "/opt/ms/bin/memstrata", "args": ["serve", "--http"]},
        {"command": "/opt/ms/bin/memstrata", "args": ["serve"], "env": {"TOKEN": "x"}},
        {"command": "/opt/ms/bin/memstrata", "args": ["serve"], "cwd": "/srv"},
        {"type": "http", "url": "http://nas:8765/mcp"},
        {"command": "python", "args": ["-m", "server"]},
    ],
)
def test_a_memstrata_server_of_another_shape_is_refused_and_kept(entry: dict[str, Any]) -> None:
    document = {"mcpServers": {"memstrata": entry, "db": {"command": "db-mcp"}}}
    with pytest.raises(SettingsShapeError, match="setup leaves it alone"):
        merge_server(document, server_entry(COMMAND, ENV), "c")
    assert remove_server(document, "c") == document


def test_a_foreign_memstrata_server_is_refused_on_install_and_kept_on_uninstall(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    claude_json, settings = home / ".claude.json", home / ".claude" / "settings.json"
    proxy = {"command": "npx", "args": ["@acme/memstrata-http-proxy"]}
    write_json(claude_json, {"mcpServers": {"memstrata": proxy}})
    before = claude_json.read_text()
    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert (code, out) == (1, "")
    assert err == (
        f"memstrata setup: `mcpServers.memstrata` in {claude_json} is a server setup did not "
        "write (it runs `npx @acme/memstrata-http-proxy`); setup leaves it alone: remove or "
        "rename it to register memstrata there; fix it, then run setup again. Nothing was "
        "changed.\n"
    )
    assert claude_json.read_text() == before
    assert not settings.exists(), "all or nothing: the hooks are not written either"

    write_json(settings, merge_hooks(USER_SETTINGS, hook_groups(COMMAND, ENV), "s"))
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--uninstall")
    assert code == 0
    assert claude_json.read_text() == before
    assert read_json(settings) == USER_SETTINGS
    assert (
        f"kept: `mcpServers.memstrata` in {claude_json} is not setup's "
        "(it runs `npx @acme/memstrata-http-proxy`)" in out
    )


def test_lookalike_hooks_in_a_real_file_survive_install_and_uninstall(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    settings = home / ".claude" / "settings.json"
    lookalikes = {
        "hooks": {
            event.name: [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": f"my-logger memstrata hook {event.argument}",
                        },
                        {"type": "command", "command": f"python -m server hook {event.argument}"},
                    ]
                }
            ]
            for event in HOOK_EVENTS
        }
    }
    write_json(settings, lookalikes)
    original = settings.read_text()
    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    hooks = read_json(settings)["hooks"]
    assert all(len(hooks[e.name]) == 2 for e in HOOK_EVENTS)
    assert all(hooks[e.name][0] == lookalikes["hooks"][e.name][0] for e in HOOK_EVENTS)
    assert run_cli(capsys, "setup", "claude-code", "--uninstall")[0] == 0
    assert settings.read_text() == original


# --- symbolic links ----------------------------------------------------------------------------


def test_symlinked_settings_files_are_written_through_and_stay_links(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    targets = {
        ".claude.json": dotfiles / "claude.json",
        "settings.json": dotfiles / "settings.json",
    }
    write_json(targets[".claude.json"], USER_CLAUDE_JSON)
    write_json(targets["settings.json"], USER_SETTINGS)
    originals = {name: target.read_text() for name, target in targets.items()}
    links = {
        ".claude.json": home / ".claude.json",
        "settings.json": home / ".claude" / "settings.json",
    }
    links["settings.json"].parent.mkdir()
    for name, link in links.items():
        link.symlink_to(targets[name])

    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    for name, link in links.items():
        assert link.is_symlink() and link.resolve() == targets[name]
        (backup,) = backups(link)  # the backup is where the person looks: beside the link
        assert not backup.is_symlink() and backup.read_text() == originals[name]
    assert read_json(targets[".claude.json"])["mcpServers"]["memstrata"]["args"] == ["serve"]
    assert set(our_hook_commands(read_json(targets["settings.json"]))) == {
        e.name for e in HOOK_EVENTS
    }
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json", "settings.json"]

    assert run_cli(capsys, "setup", "claude-code", "--uninstall")[0] == 0
    for name, link in links.items():
        assert link.is_symlink() and link.resolve() == targets[name]
        assert targets[name].read_text() == originals[name]


def test_a_dangling_symlink_is_refused(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    (home / ".claude.json").symlink_to(home / "gone.json")
    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert (code, out) == (1, "")
    assert f"{home / '.claude.json'} is a symbolic link to {home / 'gone.json'}, which" in err
    assert (home / ".claude.json").is_symlink() and not (home / "gone.json").exists()


# --- all files or none -------------------------------------------------------------------------


def fail_replace(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Make os.replace fail with EACCES when it writes target (as a read-only file would)."""
    real = os.replace

    def failing(src: Any, dst: Any) -> None:
        if Path(dst) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(target))
        real(src, dst)

    monkeypatch.setattr(os, "replace", failing)


def test_when_the_second_file_cannot_be_replaced_the_first_is_put_back(
    capsys: pytest.CaptureFixture[str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_json, settings = home / ".claude.json", home / ".claude" / "settings.json"
    write_json(claude_json, USER_CLAUDE_JSON)
    write_json(settings, USER_SETTINGS)
    before = {p: p.read_text() for p in (claude_json, settings)}
    fail_replace(monkeypatch, settings)
    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert (code, out) == (1, "")
    assert (
        err == f"memstrata setup: cannot write {settings}: Permission denied; nothing was changed\n"
    )
    assert {p: p.read_text() for p in before} == before
    assert backups(claude_json) == backups(settings) == []
    assert sorted(p.name for p in home.rglob("*")) == [".claude", ".claude.json", "settings.json"]


def test_when_the_second_file_cannot_be_created_the_first_is_untouched(
    capsys: pytest.CaptureFixture[str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_json, settings = home / ".claude.json", home / ".claude" / "settings.json"
    write_json(claude_json, USER_CLAUDE_JSON)
    before = claude_json.read_text()
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        if Path(kwargs["dir"]) == settings.parent:
            raise OSError(errno.ENOSPC, "No space left on device", str(settings.parent))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    code, _, err = run_cli(capsys, "setup", "claude-code")
    assert code == 1
    assert err.endswith("No space left on device; nothing was changed\n")
    assert claude_json.read_text() == before
    assert not settings.parent.exists(), "the directory setup made for it is gone again"
    assert backups(claude_json) == []
    assert [p.name for p in home.iterdir()] == [".claude.json"]


def test_a_first_file_setup_created_is_deleted_again_when_the_second_fails(
    capsys: pytest.CaptureFixture[str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = home / ".claude" / "settings.json"
    write_json(settings, USER_SETTINGS)
    fail_replace(monkeypatch, settings)
    assert run_cli(capsys, "setup", "claude-code")[0] == 1
    assert not (home / ".claude.json").exists()
    assert read_json(settings) == USER_SETTINGS


# --- what cannot be read is refused with one line ----------------------------------------------


def assert_refused(capsys: pytest.CaptureFixture[str], path: Path, reason: str) -> None:
    for argv in (("setup", "claude-code"), ("setup", "claude-code", "--uninstall")):
        code, out, err = run_cli(capsys, *argv)
        assert (code, out) == (1, ""), err
        assert err.startswith(f"memstrata setup: {path} {reason}"), err
        assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"limits": {"max": 1e400}}', "holds the number 1e400, which has no finite value"),
        ('{"limits": {"max": -1E+999}}', "holds the number -1E+999, which has no finite value"),
        ('{"x": NaN}', "holds the number NaN"),
        ('{"x": Infinity}', "holds the number Infinity"),
        ('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than 100 levels"),
        ('{"x": ' + "[" * 150 + "]" * 150 + "}", "nests deeper than 100 levels"),
        ('{"x": 1' + "0" * 5000 + "}", "holds a value that cannot be read"),
        ("[1, 2]", "does not hold a JSON object"),
    ],
    ids=[
        "1e400",
        "-1e999",
        "nan",
        "infinity",
        "100k-deep",
        "150-deep",
        "5000-digits",
        "list",
    ],
)
def test_json_that_cannot_be_written_back_is_refused(
    capsys: pytest.CaptureFixture[str], home: Path, text: str, reason: str
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    assert_refused(capsys, settings, reason)
    assert settings.read_text() == text
    assert not (home / ".claude.json").exists()


def test_half_a_surrogate_pair_is_refused_when_the_file_would_be_written(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    text = '{"x": "\\ud800"}'
    (home / ".claude.json").write_text(text)
    code, out, err = run_cli(capsys, "setup", "claude-code")
    assert (code, out) == (1, "")
    assert err.startswith(
        f"memstrata setup: {home / '.claude.json'} holds a \\u escape of half a surrogate pair"
    )
    assert (home / ".claude.json").read_text() == text
    assert run_cli(capsys, "setup", "claude-code", "--uninstall")[0] == 0  # nothing to write


def test_bytes_that_are_not_utf8_are_refused(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    (home / ".claude.json").write_bytes(b'{"name": "caf\xe9"}')
    assert_refused(capsys, home / ".claude.json", "is not UTF-8 text (byte 13)")


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(
    capsys: pytest.CaptureFixture[str], home: Path, doctor_env: Path
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    os.mkfifo(settings)
    # Should setup open the pipe after all, this writer lets it go on (and the test fail)
    # instead of hanging the suite.
    writer = threading.Thread(target=lambda: open(settings, "w").close(), daemon=True)
    writer.start()
    try:
        assert_refused(capsys, settings, "is a named pipe, not a regular file")
        _, checks = claude_checks(capsys)
        assert checks["claude code (user)"]["status"] == "warn"
        assert "is a named pipe" in checks["claude code (user)"]["detail"]
    finally:
        os.close(os.open(settings, os.O_RDONLY | os.O_NONBLOCK))  # releases the writer
        writer.join()
    assert stat.S_ISFIFO(os.lstat(settings).st_mode)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_or_directory_is_refused(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    (home / ".claude.json").symlink_to("/dev/zero")
    assert_refused(capsys, home / ".claude.json", "is a character device, not a regular file")
    (home / ".claude.json").unlink()
    (home / ".claude.json").mkdir()
    assert_refused(capsys, home / ".claude.json", "is a directory, not a regular file")


def test_a_huge_file_is_refused_unread(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    with (home / ".claude.json").open("wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    assert_refused(capsys, home / ".claude.json", "is larger than 64 MiB")


# --- the project scope leaves the repository as it was -----------------------------------------


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for a directory)."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    repo = tmp_path / "api"
    (repo / ".git").mkdir(parents=True)
    (repo / "README.md").write_text("# api\n")
    monkeypatch.chdir(repo)
    return repo


def test_project_scope_install_then_uninstall_leaves_an_empty_repository_as_it_was(
    capsys: pytest.CaptureFixture[str], repo: Path, home: Path
) -> None:
    before = tree(repo)
    assert run_cli(capsys, "setup", "claude-code", "--scope", "project")[0] == 0
    assert {".mcp.json", ".claude/settings.json"} <= set(tree(repo))
    assert run_cli(capsys, "setup", "claude-code", "--scope", "project")[0] == 0  # again: no-op
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--scope", "project", "--uninstall")
    assert code == 0
    assert tree(repo) == before
    assert f"memstrata removed from {repo / '.mcp.json'} (deleted: setup had created it)" in out
    record = home / ".local" / "state" / "memstrata" / "setup-created.json"
    assert read_json(record) == {"created": []}


def test_project_scope_backups_go_outside_the_repository(
    capsys: pytest.CaptureFixture[str], repo: Path, home: Path
) -> None:
    write_json(repo / ".mcp.json", {"mcpServers": {"db": {"command": "db-mcp"}}})
    write_json(repo / ".claude" / "settings.json", {})  # the person's own empty file
    before = tree(repo)
    code, out, _ = run_cli(capsys, "setup", "claude-code", "--scope", "project")
    assert code == 0
    assert not [p for p in tree(repo) if "memstrata-backup" in p]
    state = home / ".local" / "state" / "memstrata" / "setup-backups"
    (folder,) = state.iterdir()
    assert folder.name.startswith("api-")
    made = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert [m.split(".memstrata-backup-")[0] for m in made] == [
        ".claude/settings.json",
        ".mcp.json",
    ]
    assert f"(backup: {folder / '.mcp.json.memstrata-backup-'}" in out
    assert (folder / made[1]).read_bytes() == before[".mcp.json"]

    assert run_cli(capsys, "setup", "claude-code", "--scope", "project", "--uninstall")[0] == 0
    assert tree(repo) == before, "its own `{}` file is kept"


def test_user_scope_uninstall_deletes_only_the_files_setup_created(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    write_json(home / ".claude.json", {"numStartups": 1})
    assert run_cli(capsys, "setup", "claude-code")[0] == 0
    (home / ".claude" / "projects").mkdir()  # Claude Code keeps things there too
    assert run_cli(capsys, "setup", "claude-code", "--uninstall")[0] == 0
    assert read_json(home / ".claude.json") == {"numStartups": 1}
    assert not (home / ".claude" / "settings.json").exists()
    assert (home / ".claude" / "projects").is_dir()
