"""MEMSTRATA_PROJECT_SCOPE: one rule for the server's default project, the hooks and the CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memory_core.domain.inputs import check_project
from server.project.scope import identity_of, legacy_project, project_for, project_name
from server.settings import Settings

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(*args: str, cwd: Path) -> None:
    """Run the real git, isolated from the person's configuration."""
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV}
    )


def checkout(path: Path, remote: str | None = None) -> Path:
    """A real repository with one commit (and `origin` when given)."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
    if remote is not None:
        git("remote", "add", "origin", remote, cwd=path)
    return path


def add_submodule(outer: Path, source: Path, at: str) -> Path:
    """`source` added to `outer` as a submodule at `at` (its remote: the path)."""
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), at, cwd=outer)
    return outer / at


def test_fixed_scope_keeps_the_configured_project(tmp_path: Path) -> None:
    assert project_for("work", "fixed", tmp_path) == "work"


def test_a_checkout_with_a_remote_is_named_after_it_from_any_subdirectory(tmp_path: Path) -> None:
    repo = checkout(tmp_path / "shop-api", "git@github.com:acme/shop-api.git")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_for("default", "git", deep) == "shop-api@github.com/acme/shop-api"
    assert project_for("default", "git", repo) == "shop-api@github.com/acme/shop-api"
    found = identity_of("git", deep)
    assert (found.display, found.identity, found.root) == (
        "shop-api",
        "github.com/acme/shop-api",
        repo,
    )


def test_clones_of_one_remote_share_a_project_whatever_their_folder(tmp_path: Path) -> None:
    ssh = checkout(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    https = checkout(tmp_path / "oss" / "api-copy", "https://github.com/acme/api")
    assert project_for("d", "git", ssh) == project_for("d", "git", https)
    assert project_for("d", "path", ssh) != project_for("d", "path", https)


def test_one_folder_name_in_two_repositories_gives_two_projects(tmp_path: Path) -> None:
    mine = checkout(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    theirs = checkout(tmp_path / "oss" / "api", "git@github.com:evil/api.git")
    bare_a = checkout(tmp_path / "a" / "notes")
    bare_b = checkout(tmp_path / "b" / "notes")
    names = {project_for("d", "git", where) for where in (mine, theirs, bare_a, bare_b)}
    assert len(names) == 4
    assert {name.split("@")[0] for name in names} == {"api", "notes"}


def test_victim_and_victim_bang_are_two_projects(tmp_path: Path) -> None:
    victim = checkout(tmp_path / "victim")
    bang = checkout(tmp_path / "victim!")
    assert legacy_project(victim) == legacy_project(bang) == "victim", "the old collision"
    ours, theirs = project_for("d", "git", victim), project_for("d", "git", bang)
    assert ours != theirs
    assert ours.startswith("victim@") and theirs.startswith("victim@")


def test_without_a_remote_the_name_hides_the_path(tmp_path: Path) -> None:
    repo = checkout(tmp_path / "private-notes")
    name = project_for("d", "git", repo)
    assert name.startswith("private-notes@")
    assert str(tmp_path.name) not in name
    assert len(name.split("@")[1]) == 12


def test_worktrees_share_the_repositorys_project_unless_scope_is_path(tmp_path: Path) -> None:
    for remote in ("git@github.com:acme/api.git", None):
        main = checkout(tmp_path / f"api-{remote is None}", remote)
        tree = tmp_path / f"feature-{remote is None}"
        git("worktree", "add", "-q", "-b", f"f{remote is None}", str(tree), cwd=main)
        assert project_for("d", "git", tree) == project_for("d", "git", main)
        assert project_for("d", "path", tree) != project_for("d", "path", main)
        assert identity_of("git", tree).root == tree


def test_a_submodule_is_its_own_project(tmp_path: Path) -> None:
    lib = checkout(tmp_path / "lib-src")
    app = checkout(tmp_path / "app", "git@github.com:acme/app.git")
    sub = add_submodule(app, lib, "vendor/lib")
    assert (sub / ".git").is_file()
    name = project_for("d", "git", sub)
    assert name == f"lib-src@file:{lib}" or name.startswith("lib-src@")
    assert name != project_for("d", "git", app)
    assert project_for("d", "git", sub / "..") == project_for("d", "git", app)


def test_outside_git_the_directorys_path_is_the_identity(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "notes", tmp_path / "y" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    assert project_for("d", "git", a).startswith("notes@")
    assert project_for("d", "git", a) != project_for("d", "git", b)
    assert legacy_project(a) == "notes"


def test_every_name_is_a_valid_project_name(tmp_path: Path) -> None:
    long_remote = "https://git.example.com/" + "/".join(["group"] * 40) + "/repo.git"
    odd = [
        checkout(tmp_path / "日本語"),
        checkout(tmp_path / "long", long_remote),
        checkout(tmp_path / "tilde", "git@host.example:~user/My Repo.git"),
        checkout(tmp_path / "v6", "ssh://git@[::1]:2222/acme/api.git"),
        checkout(tmp_path / ("n" * 200)),
    ]
    names = [project_for("d", "git", where) for where in odd]
    for name in names:
        assert check_project(name) == name
    assert names[0].startswith("project@")
    assert names[1].startswith("repo@") and len(names[1]) == len("repo@") + 12
    assert names[2].startswith("My-Repo@")
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("My Project (2024)", "My-Project-2024"),
        (".hidden", "hidden"),
        ("a/b", "a-b"),
        ("日本語", None),
        ("---", None),
        ("x" * 300, "x" * 128),
    ],
)
def test_names_are_sanitised_to_the_project_rules(raw: str, expected: str | None) -> None:
    assert project_name(raw) == expected


def test_an_unresolvable_directory_falls_back_to_the_configured_project(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert project_for("fallback", "git", loop / "x") == "fallback"


def test_settings_default_project_uses_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = checkout(tmp_path / "billing", "https://github.com/acme/billing.git")
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "git")
    monkeypatch.setenv("MEMSTRATA_PROJECT", "base")
    settings = Settings()
    assert settings.default_project(repo) == "billing@github.com/acme/billing"
    monkeypatch.chdir(repo)
    assert settings.default_project() == "billing@github.com/acme/billing"
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "path")
    assert Settings().default_project(repo) == identity_of("path", repo.resolve()).name
    assert Settings().default_project(repo).startswith("billing@")
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "fixed")
    assert Settings().default_project(repo) == "base"
