"""The CLI, the hooks (cold and through the warm listener) and the server name one project in
one directory: a checkout with a remote, one without, a worktree, a submodule, two checkouts
with one folder name, and `victim` beside `victim!`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlean

from server.cli.memory import cli_project
from server.hooks.listener import ListenerParts, hook_settings
from server.hooks.payload import parse_payload
from server.settings import Settings
from tests.unit.test_project_scope import add_submodule, checkout, git

HOOK_ENV = {"MEMSTRATA_PROJECT_SCOPE": "git"}  # what the plugin and setup put on hooks and server


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """Checkouts of every kind, by role."""
    api = checkout(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    add_submodule(api, checkout(tmp_path / "lib-src"), "vendor/lib")
    git("worktree", "add", "-q", "-b", "feature", str(tmp_path / "api-feature"), cwd=api)
    places = {
        "api": api,
        "clone": checkout(tmp_path / "oss" / "api", "https://github.com/acme/api"),
        "other": checkout(tmp_path / "evil" / "api", "git@github.com:evil/api.git"),
        "worktree": tmp_path / "api-feature",
        "submodule": api / "vendor" / "lib",
        "plain": checkout(tmp_path / "notes"),
        "victim": checkout(tmp_path / "victim"),
        "victim!": checkout(tmp_path / "victim!"),
    }
    for where in places.values():
        (where / "src").mkdir(exist_ok=True)
    return places


def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [k for k in os.environ if k.startswith("MEMSTRATA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "memory.db"))


def _as_everyone_names_it(monkeypatch: pytest.MonkeyPatch, where: Path) -> set[str]:
    """The project of `where` for the CLI, a cold hook, the warm listener and the server."""
    cli = cli_project(Settings(), None, where)
    with monkeypatch.context() as env:
        for name, value in HOOK_ENV.items():
            env.setenv(name, value)
        payload = parse_payload(json.dumps({"session_id": "s", "cwd": str(where)}), "session-start")
        hook = Settings().default_project(payload.cwd)
        env.chdir(where)
        server = Settings().default_project()
    parts = ListenerParts(Settings(), backend=None, embedder=None, indexer=None)  # type: ignore[arg-type]
    warm = hook_settings(parts, HOOK_ENV).default_project(payload.cwd)
    return {cli, hook, server, warm}


def test_every_entry_point_names_the_same_project_in_each_directory(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clean(monkeypatch, tmp_path)
    names: dict[str, str] = {}
    for role, where in world.items():
        for directory in (where, where / "src"):
            seen = _as_everyone_names_it(monkeypatch, directory)
            assert len(seen) == 1, (role, directory, seen)
        names[role] = seen.pop()
    assert names["api"] == names["clone"] == names["worktree"] == "api@github.com/acme/api"
    assert names["other"] == "api@github.com/evil/api"
    assert names["submodule"] == f"lib-src@file:{(tmp_path / 'lib-src').resolve()}"
    assert names["plain"].startswith("notes@")
    assert names["victim"] != names["victim!"]
    assert len({names[r] for r in ("api", "other", "submodule", "plain", "victim", "victim!")}) == 6


def test_path_scope_keeps_clones_and_worktrees_apart_for_everyone(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clean(monkeypatch, tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "HOOK_ENV", {"MEMSTRATA_PROJECT_SCOPE": "path"})
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "path")
    names = {}
    for role in ("api", "clone", "worktree"):
        seen = _as_everyone_names_it(monkeypatch, world[role])
        assert len(seen) == 1
        names[role] = seen.pop()
    assert len(set(names.values())) == 3


def _hook(where: Path, env: dict[str, str], session: str) -> None:
    """A real cold session-start hook process, as Claude Code runs it."""
    payload = {"session_id": session, "cwd": str(where), "hook_event_name": "SessionStart"}
    subprocess.run(
        [sys.executable, "-m", "server", "hook", "session-start"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=where,
        timeout=120,
        check=True,
    )


def test_real_hook_processes_in_victim_and_victim_bang_write_two_projects(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clean(monkeypatch, tmp_path)
    db = tmp_path / "memory.db"
    env: dict[str, Any] = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")},
        **HOOK_ENV,
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "MEMSTRATA_HOOKS__WARM": "false",
    }
    _hook(world["victim"], env, "s-victim")
    _hook(world["victim!"], env, "s-bang")
    with sqlean.connect(str(db)) as conn:
        stored = dict(conn.execute("SELECT session_id, project FROM hook_sessions").fetchall())
    assert stored["s-victim"] == cli_project(Settings(), None, world["victim"])
    assert stored["s-bang"] == cli_project(Settings(), None, world["victim!"])
    assert stored["s-victim"] != stored["s-bang"]
