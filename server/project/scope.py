"""The default project of a working directory: one rule for the MCP server, the hooks and the CLI.

MEMSTRATA_PROJECT_SCOPE picks the rule:

- `fixed` (the default): MEMSTRATA_PROJECT.
- `git` (what the Claude Code plugin and `setup claude-code` run with): the repository the
  directory belongs to. Its identity is the checkout's remote (`origin`, else the first one),
  normalised (`github.com/acme/api` for the ssh and https forms alike), so every clone and
  every worktree of one repository shares one memory; a repository without a remote is
  identified by its main work tree's absolute path (its worktrees share it); a directory
  outside git by its own path.
- `path`: the work tree's (or, outside git, the directory's) own absolute path: every clone
  and every worktree is a project of its own.

The name stored is `<display>@<locator>`: the display name first (the remote's last path
segment, else the directory's name, e.g. `api`), so every message, `memstrata stats` and the
session-start text stay readable, then the remote itself when it fits the project-name rules
(`api@github.com/acme/api`), else the first 12 hex digits of the identity's SHA-256
(`api@3f09c2a1b4d7`; a path is never shown whole). Two checkouts with one folder name but
different identities therefore get different projects; one identity always gets one name.

Earlier versions named the project after the work tree's folder alone (`legacy_project`);
server.project.adoption moves such a project to its new name when that is provably safe.

Only `server.project.repo_identity`, the name pattern and the stdlib are imported (no pydantic), and
the checkout's files are read without running git, because a hook process pays for both.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory_core.domain.project_names import PROJECT_NAME
from server.project.repo_identity import checkout_of, git_root

__all__ = [
    "ProjectIdentity",
    "Scope",
    "git_root",
    "identity_of",
    "legacy_project",
    "project_for",
    "project_name",
]

Scope = Literal["fixed", "git", "path"]

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._:@-]+")  # "/" is allowed in names, not in one path part
_MAX = 128
_DIGEST_HEX = 12  # 48 bits: no two of one person's checkouts collide by chance
_DISPLAY_MAX = 60  # leaves room for "@" and a remote within the 128 characters


@dataclass(frozen=True)
class ProjectIdentity:
    """Who a directory's project is.

    Attributes:
        name: The project name stored (`api@github.com/acme/api`).
        display: The readable part (`api`), for messages.
        identity: What the name stands for: the normalised remote, or an absolute path.
        root: The work tree holding the directory (outside git, the directory itself).
    """

    name: str
    display: str
    identity: str
    root: Path


def project_name(raw: str) -> str | None:
    """`raw` made a valid project name (runs of other characters become '-'), or None."""
    name = _NOT_ALLOWED.sub("-", raw.strip())
    name = name.lstrip("._:@-")[:_MAX].rstrip("-")
    return name if _valid(name) else None


def _valid(name: str) -> bool:
    """check_project's rule, without importing pydantic into a hook process for it."""
    return PROJECT_NAME.match(name) is not None


def _named(display: str, identity: str, readable: bool) -> str:
    """`display@identity` when asked for and valid, else `display@<digest of identity>`."""
    if readable and _valid(candidate := f"{display}@{identity}"):
        return candidate
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{display}@{digest[:_DIGEST_HEX]}"


def _display(raw: str) -> str:
    """A readable project-name part for `raw` ("project" when nothing of it is usable)."""
    name = project_name(raw.replace("@", "-").replace("/", "-")) or "project"
    return name[:_DISPLAY_MAX].rstrip("._:-") or "project"


def identity_of(scope: Literal["git", "path"], directory: Path) -> ProjectIdentity:
    """The project of `directory` (absolute and resolved) under `scope` (module docstring)."""
    checkout = checkout_of(directory)
    if checkout is None:
        named = directory
    elif scope == "git" and checkout.remote is not None:
        remote = checkout.remote
        display = _display(remote.rsplit("/", 1)[-1])
        name = _named(display, remote, readable=True)
        return ProjectIdentity(name, display, remote, checkout.root)
    else:
        named = checkout.main_root if scope == "git" else checkout.root
    display = _display(named.name)
    path = str(named)
    root = directory if checkout is None else checkout.root
    return ProjectIdentity(_named(display, path, readable=False), display, path, root)


def legacy_project(directory: Path) -> str | None:
    """The name `git` scope gave `directory` before identities: its work tree's folder name."""
    root = git_root(directory)
    for where in (root, directory):
        if where is not None and (name := project_name(where.name)):
            return name
    return None


def project_for(fallback: str, scope: Scope, cwd: Path) -> str:
    """The default project for `cwd` under `scope` (see the module docstring)."""
    if scope == "fixed":
        return fallback
    try:
        resolved = cwd.expanduser().resolve()
    except (OSError, RuntimeError):
        return fallback
    return identity_of(scope, resolved).name
