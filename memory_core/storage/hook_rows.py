"""What both hook_sessions stores share: reading a row's capture place, and their writes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.hook_session import TranscriptCursor

__all__ = ["HookSessionWrites", "capture_place", "fresh"]

_T = TypeVar("_T", int, str)


def capture_place(row: Any) -> CapturePlace:
    """The transcript capture's place from a hook_sessions row (either backend's mapping)."""
    mark = row["transcript_entry"]
    return CapturePlace(
        cursor=TranscriptCursor(int(row["transcript_lines"]), row["transcript_uuid"]),
        offset=int(row["transcript_offset"]),
        entry_mark=None if mark is None else int(mark),
        summary_id=None if row["summary_id"] is None else int(row["summary_id"]),
        title=row["transcript_title"],
    )


def fresh(known: Sequence[_T], values: Sequence[_T]) -> list[_T]:
    """`values` not in `known`, each once, in their order: what an append-unique list adds."""
    seen = set(known)
    return [v for v in dict.fromkeys(values) if v not in seen]


class HookSessionWrites:
    """The hook session store's writes, on the two primitives each backend implements.

    `_append_unique` adds values to a JSON list column and `_set` sets columns, each in one
    transaction that holds the session's row against concurrent hooks of the session.
    """

    async def _append_unique(
        self,
        operation: str,
        project: str,
        session_id: str,
        column: str,
        values: Sequence[_T],
        now: datetime,
    ) -> list[_T]:
        raise NotImplementedError

    async def _set(
        self, operation: str, project: str, session_id: str, now: datetime, **columns: Any
    ) -> None:
        raise NotImplementedError

    async def add_injected(
        self, project: str, session_id: str, ids: Sequence[int], now: datetime
    ) -> list[int]:
        """Record memories as injected; the new ones are returned."""
        return await self._append_unique(
            "recording injected memories", project, session_id, "injected", ids, now
        )

    async def add_tool_rules(
        self, project: str, session_id: str, marks: Sequence[str], now: datetime
    ) -> list[str]:
        """Record rules as shown at a tool call; the new marks are returned."""
        return await self._append_unique(
            "recording rules shown at a tool call", project, session_id, "tool_rules", marks, now
        )

    async def save_transcript(
        self,
        project: str,
        session_id: str,
        cursor: TranscriptCursor,
        summary_id: int | None,
        now: datetime,
    ) -> None:
        """Move the cursor (its byte offset and entry mark unknown) and record the summary."""
        await self.save_place(project, session_id, CapturePlace(cursor, summary_id=summary_id), now)

    async def save_place(
        self, project: str, session_id: str, place: CapturePlace, now: datetime
    ) -> None:
        """Record where the transcript capture stands, all of it in one transaction."""
        await self._set(
            "saving a transcript cursor",
            project,
            session_id,
            now,
            transcript_lines=place.cursor.lines,
            transcript_uuid=place.cursor.uuid,
            transcript_offset=place.offset,
            transcript_entry=place.entry_mark,
            transcript_title=place.title,
            summary_id=place.summary_id,
        )

    async def save_stop_offset(
        self, project: str, session_id: str, offset: int, now: datetime
    ) -> None:
        """Record the Stop hook's place in the transcript."""
        await self._set(
            "saving the stop hook's place", project, session_id, now, stop_offset=offset
        )
