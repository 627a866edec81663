"""The storage port of the Claude Code hooks' per-session state (table hook_sessions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.hook_session import HookSession, TranscriptCursor

__all__ = ["HookSessionStore"]


class HookSessionStore(Protocol):
    """Per (project, session): the injected start context, injected memories, the cursor."""

    async def get(self, project: str, session_id: str) -> HookSession | None:
        """The session's state, or None before any hook wrote it."""
        ...

    async def get_place(self, project: str, session_id: str) -> CapturePlace:
        """Where the session's transcript capture stands (CapturePlace() before any capture)."""
        ...

    async def latest_summary(self, project: str, exclude_session: str | None) -> int | None:
        """The summary memory of the project's most recently recorded session (not `exclude`)."""
        ...

    async def save_start(
        self, project: str, session_id: str, text: str, tokens: int, now: datetime
    ) -> HookSession:
        """Keep `text` as the session's start context unless one is kept already (first wins).

        Returns the state after the call, whose `start_context` is what the session was given.
        """
        ...

    async def add_injected(
        self, project: str, session_id: str, ids: Sequence[int], now: datetime
    ) -> list[int]:
        """Record memories as injected; returns those of `ids` not injected before, in order."""
        ...

    async def save_transcript(
        self,
        project: str,
        session_id: str,
        cursor: TranscriptCursor,
        summary_id: int | None,
        now: datetime,
    ) -> None:
        """Move the cursor (its byte offset and entry mark unknown) and record the summary."""
        ...

    async def save_place(
        self, project: str, session_id: str, place: CapturePlace, now: datetime
    ) -> None:
        """Record where the transcript capture stands (CapturePlace), in one transaction."""
        ...

    async def save_stop_offset(
        self, project: str, session_id: str, offset: int, now: datetime
    ) -> None:
        """Record where in the transcript the Stop hook last asked or saw a save."""
        ...

    async def add_tool_rules(
        self, project: str, session_id: str, marks: Sequence[str], now: datetime
    ) -> list[str]:
        """Record rules as shown at a tool call; returns those of `marks` not shown before."""
        ...
