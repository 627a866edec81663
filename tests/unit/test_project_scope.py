"""MEMSTRATA_PROJECT_SCOPE: one rule for the server's default project and the hooks."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.project_scope import git_root, project_for, project_name
from server.settings import Settings


def test_fixed_scope_keeps_the_configured_project(tmp_path: Path) -> None:
    assert project_for("work", "fixed", tmp_path) == "work"


def test_git_scope_names_the_work_tree_from_any_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert git_root(deep) == repo
    assert project_for("default", "git", deep) == "shop-api"


def test_a_linked_worktree_with_a_git_file_is_its_own_tree(tmp_path: Path) -> None:
    tree = tmp_path / "wt-feature"
    tree.mkdir()
    (tree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt-feature\n")
    assert project_for("default", "git", tree) == "wt-feature"


def test_outside_git_the_directory_name_is_used(tmp_path: Path) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    assert project_for("default", "git", plain) == "notes"


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


def test_no_valid_name_falls_back_to_the_configured_project(tmp_path: Path) -> None:
    odd = tmp_path / "日本語"
    odd.mkdir()
    assert project_for("fallback", "git", odd) == "fallback"


def test_settings_default_project_uses_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "billing"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "git")
    monkeypatch.setenv("MEMSTRATA_PROJECT", "base")
    settings = Settings()
    assert settings.default_project(repo) == "billing"
    monkeypatch.chdir(repo)
    assert settings.default_project() == "billing"
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "fixed")
    assert Settings().default_project(repo) == "base"
