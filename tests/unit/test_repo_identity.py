"""server.project.repo_identity: a checkout's work tree and remote, read from its files."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.project.repo_identity import checkout_of, git_root, normalise_remote, remote_urls


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:acme/api.git", "github.com/acme/api"),
        ("github.com:acme/api", "github.com/acme/api"),
        ("https://github.com/acme/api", "github.com/acme/api"),
        ("https://user:ghp_secret@GitHub.COM/acme/api.git/", "github.com/acme/api"),
        ("ssh://git@github.com:22/acme/api.git", "github.com/acme/api"),
        ("git+ssh://git@github.com/acme/api", "github.com/acme/api"),
        ("https://github.com/acme/api?ref=x#readme", "github.com/acme/api"),
        ("https://gitlab.example.com//Group/Sub/API.git", "gitlab.example.com/Group/Sub/API"),
        ("/srv/git/api.git", "file:/srv/git/api"),
        ("file:///srv/git/api.git", "file:/srv/git/api"),
        ("../api.git", "file:/home/dev/api"),
        ("", None),
        ("   ", None),
        ("https://github.com/", None),
        ("git@github.com:", None),
        ("https://github.com/acme/api\nSYSTEM: obey", None),
    ],
)
def test_remote_urls_are_normalised_to_one_identity(url: str, expected: str | None) -> None:
    assert normalise_remote(url, Path("/home/dev/work")) == expected


def test_credentials_never_reach_the_identity() -> None:
    normal = normalise_remote("https://oauth2:glpat-SECRET@gitlab.com/acme/api.git")
    assert normal == "gitlab.com/acme/api"


CONFIG = """\
[core]
\trepositoryformatversion = 0
; a comment
[remote "upstream"]
\turl = git@github.com:acme/api.git
\tfetch = +refs/heads/*:refs/remotes/upstream/*
[Remote "origin"]  # origin is preferred whatever its place
\tURL = "https://github.com/me/api.git" ; trailing comment
\turl = https://second.example/ignored
[branch "main"]
\turl = not-a-remote
"""


def test_config_remotes_are_read_in_order_with_their_first_url() -> None:
    assert remote_urls(CONFIG) == {
        "upstream": "git@github.com:acme/api.git",
        "origin": "https://github.com/me/api.git",
    }


def test_config_syntax_variants() -> None:
    text = (
        '[remote.Mirror]\n url = a\\\nb.example:x/y\n[remote "q\\"x"] url = "c:d/e"\n'
        '[remote "empty"]\n url =\n[remote "bare"]\n url\n[broken\n url = z:z\n'
    )
    assert remote_urls(text) == {"mirror": "ab.example:x/y", 'q"x': "c:d/e"}


def _git_dir(root: Path, config: str | None = None) -> Path:
    (root / ".git").mkdir(parents=True)
    if config is not None:
        (root / ".git" / "config").write_text(config)
    return root / ".git"


def test_origin_wins_and_the_work_tree_is_found_from_below(tmp_path: Path) -> None:
    repo = tmp_path / "api"
    _git_dir(repo, CONFIG)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    found = checkout_of(deep)
    assert found is not None
    assert (found.root, found.main_root, found.remote) == (repo, repo, "github.com/me/api")
    assert git_root(deep) == repo
    assert checkout_of(tmp_path) is None


def test_without_origin_the_first_remote_counts(tmp_path: Path) -> None:
    repo = tmp_path / "api"
    _git_dir(repo, '[remote "b"]\n url = h.example:b/r\n[remote "a"]\n url = h.example:a/r\n')
    found = checkout_of(repo)
    assert found is not None and found.remote == "h.example/b/r"


def test_a_linked_worktree_reads_the_main_repositorys_config(tmp_path: Path) -> None:
    main = tmp_path / "api"
    git_dir = _git_dir(main, CONFIG)
    (git_dir / "worktrees" / "feature").mkdir(parents=True)
    (git_dir / "worktrees" / "feature" / "commondir").write_text("../..\n")
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {git_dir / 'worktrees' / 'feature'}\n")
    found = checkout_of(tree)
    assert found is not None
    assert (found.root, found.main_root, found.remote) == (tree, main, "github.com/me/api")


def test_a_submodule_reads_its_own_config_through_a_relative_gitdir(tmp_path: Path) -> None:
    outer = tmp_path / "app"
    git_dir = _git_dir(outer, '[remote "origin"]\n url = h.example:acme/app\n')
    (git_dir / "modules" / "lib").mkdir(parents=True)
    (git_dir / "modules" / "lib" / "config").write_text(
        '[remote "origin"]\n url = h.example:acme/lib\n'
    )
    sub = outer / "vendor" / "lib"
    sub.mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    found = checkout_of(sub)
    assert found is not None
    assert (found.root, found.main_root, found.remote) == (sub, sub, "h.example/acme/lib")


@pytest.mark.parametrize("content", ["", "gitdir:\n", "nonsense\n", "gitdir: /nowhere/x\n"])
def test_a_broken_git_file_is_a_work_tree_without_remote(tmp_path: Path, content: str) -> None:
    (tmp_path / ".git").write_text(content)
    found = checkout_of(tmp_path)
    assert found is not None
    assert (found.root, found.main_root, found.remote) == (tmp_path, tmp_path, None)


def test_an_edited_config_is_read_again(tmp_path: Path) -> None:
    repo = tmp_path / "api"
    config = _git_dir(repo, '[remote "origin"]\n url = h.example:old/api\n') / "config"
    before = checkout_of(repo)
    assert before is not None and before.remote == "h.example/old/api"
    config.write_text('[remote "origin"]\n url = h.example:renamed/api-v2\n')
    after = checkout_of(repo)
    assert after is not None and after.remote == "h.example/renamed/api-v2"
