"""ProjectMoves: the port that hands one project's rows to another name, on both backends.

Used when a project is renamed (server.project.adoption: a checkout's memories saved under
its folder name move to its repository's name). Rows are moved, never copied, in one
transaction; a row the new name already holds by its identity (a memory's key or text in
its layer, a session's id) stays under the old name and is counted, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["START_DIRECTORY", "ProjectMove", "ProjectMoves", "StartDirectories"]

# How a session-start context names its directory (services.session_start: the screen
# section's heading, then its first line). The heading anchors it: every other line of the
# context is flattened and starts with "- " or "(", so a stored memory or a preference keyed
# "directory" cannot forge it. tests/storage/test_project_moves.py builds a real context.
START_DIRECTORY = "\n## Where you are working (now)\n- directory: "


@dataclass(frozen=True)
class StartDirectories:
    """Where a project's hook sessions started, as their session-start contexts recorded it.

    Attributes:
        directories: Each distinct working directory named by a `- directory:` line.
        sessions: Hook sessions of the project with a start context.
        unnamed: Those of them whose context names no directory.
    """

    directories: frozenset[str]
    sessions: int
    unnamed: int


@dataclass(frozen=True)
class ProjectMove:
    """What a move did: rows moved and rows left under the old name (already held)."""

    memories: int = 0
    memories_kept: int = 0
    sessions: int = 0
    sessions_kept: int = 0
    hook_sessions: int = 0
    hook_sessions_kept: int = 0


class ProjectMoves(Protocol):
    """Reads what a rename needs to know, and renames."""

    async def holds_rows(self, project: str) -> bool:
        """True when the project has a memory, a conversation session or a hook session."""
        ...

    async def start_directories(self, project: str) -> StartDirectories:
        """Where the project's hook sessions started (see StartDirectories)."""
        ...

    async def move(self, old: str, new: str) -> ProjectMove:
        """Move `old`'s memories, conversations and hook sessions to `new`, in one transaction."""
        ...
