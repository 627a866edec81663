"""The default project of a working directory: one rule for the MCP server and the hooks.

`MEMSTRATA_PROJECT_SCOPE=fixed` (the default) keeps MEMSTRATA_PROJECT. `git` names the project
after the git work tree that holds the directory (the nearest parent with a `.git` directory
or file, so a linked worktree counts as its own tree), else after the directory itself,
sanitised to the project-name rules; MEMSTRATA_PROJECT when neither gives a valid name.
Claude Code starts the MCP server and runs the hooks in the same directory, so both land on
the same project and what one stores the other finds.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

from memory_core.domain.inputs import check_project
from memory_core.errors import InvalidInputError

__all__ = ["git_root", "project_for", "project_name"]

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._:@-]+")  # "/" is allowed in names, not in one path part
_MAX = 128


def git_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` that holds `.git` (no git process)."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_name(raw: str) -> str | None:
    """`raw` made a valid project name (runs of other characters become '-'), or None."""
    name = _NOT_ALLOWED.sub("-", raw.strip())
    name = name.lstrip("._:@-")[:_MAX].rstrip("-")
    try:
        return check_project(name)
    except InvalidInputError:
        return None


@functools.lru_cache(maxsize=64)
def _scoped(fallback: str, resolved: Path) -> str:
    root = git_root(resolved)
    for where in (root, resolved):
        if where is not None and (name := project_name(where.name)):
            return name
    return fallback


def project_for(fallback: str, scope: Literal["fixed", "git"], cwd: Path) -> str:
    """The default project for `cwd` under `scope` (see the module docstring)."""
    if scope == "fixed":
        return fallback
    try:
        resolved = cwd.expanduser().resolve()
    except (OSError, RuntimeError):
        return fallback
    return _scoped(fallback, resolved)
