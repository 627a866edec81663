"""The session-start "screen context" of a coding client: directory, git branch and status."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memory_core.services.session_start import ScreenContext

__all__ = ["screen_context"]

_GIT_TIMEOUT_S = 0.5


def _status_summary(codes: list[str]) -> str:
    modified = sum(1 for c in codes if c != "??")
    untracked = sum(1 for c in codes if c == "??")
    parts = []
    if modified:
        parts.append(f"{modified} changed")
    if untracked:
        parts.append(f"{untracked} untracked")
    return ", ".join(parts) or "clean"


def screen_context(cwd: Path) -> ScreenContext:
    """Where the person works; git details only when git answers within half a second.

    One `git status --porcelain -b` call gives the branch and the changed files; a directory
    outside git, a missing git binary or a slow repository leave them out.
    """
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-b", "--untracked-files=normal"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ScreenContext(cwd=str(cwd))
    if done.returncode != 0:
        return ScreenContext(cwd=str(cwd))
    lines = done.stdout.splitlines()
    branch = None
    if lines and lines[0].startswith("## "):
        head = lines.pop(0)[3:]
        branch = head.split("...", 1)[0].removeprefix("No commits yet on ").strip() or None
    codes = [line[:2].strip() for line in lines if len(line) > 3]
    files = tuple(line[3:].split(" -> ")[-1].strip('"') for line in lines if len(line) > 3)
    return ScreenContext(
        cwd=str(cwd), branch=branch, status=_status_summary(codes), changed_files=files
    )
