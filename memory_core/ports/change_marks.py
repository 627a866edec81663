"""Cheap marks of what a session or a project holds: a changed mark means "read it again".

Live subscriptions (server.live) compare these about once a second for the resources clients
follow, so writes by any process sharing the database are seen, not only this one's. A mark
is a few counters read through primary-key and index probes, never the rows themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ChangeMarks", "ProjectMark", "SessionKey", "SessionMark"]

SessionKey = tuple[str, str]  # (project, session_id)


@dataclass(frozen=True)
class SessionMark:
    """What a session holds, in counters: equal marks mean nothing a reader sees changed.

    `created_at` tells a session cleared and imported again (same id) from the one before.
    `cache` is (results, their remaining exchanges summed, the newest one's creation time):
    a put, an expiry and a hit that resets a result's life all change it.
    """

    created_at: str
    updated_at: str
    last_entry: int
    summaries: int
    exchanges: int
    qa_summary_bytes: int
    pending: bool
    cache: tuple[int, int, str]

    @classmethod
    def of(cls, row: Sequence[Any]) -> SessionMark:
        """From a row of the fields in their order, the cache's three last (both backends)."""
        created, updated, entries, summaries, exchanges, qa, pending, n, rem, newest = row
        return cls(
            created_at=str(created),
            updated_at=str(updated),
            last_entry=int(entries),
            summaries=int(summaries),
            exchanges=int(exchanges),
            qa_summary_bytes=int(qa),
            pending=bool(pending),
            cache=(int(n), int(rem), str(newest)),
        )


@dataclass(frozen=True)
class ProjectMark:
    """A project's kept counters (layer, stored tier, rows, bytes) and its newest memory.

    Adding, pruning and recalculating tiers all change the counters; first reads move rows
    to ACTIVE, which is a change of the stats a reader sees too.
    """

    counts: tuple[tuple[str, str, int, int], ...]
    newest: str

    @classmethod
    def of(cls, counts: Sequence[Sequence[Any]], newest: object) -> ProjectMark:
        """From rows of (layer, tier, n, bytes) and the newest creation time (both backends)."""
        rows = tuple((str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in counts)
        return cls(counts=rows, newest=str(newest))


class ChangeMarks(Protocol):
    """Reads of the marks, batched per tick of the watcher."""

    async def gate(self) -> object | None:
        """A value that changes whenever anything was committed to the database, or None.

        On SQLite: `PRAGMA data_version` (other connections' commits) with this connection's
        `total_changes()` (its own); equal values mean no mark can have changed. None: the
        backend has no such cheap value, read the marks.
        """
        ...

    async def sessions(self, keys: Sequence[SessionKey]) -> dict[SessionKey, SessionMark | None]:
        """The mark of each session; None for a session that does not exist (now)."""
        ...

    async def projects(self, projects: Sequence[str]) -> dict[str, ProjectMark]:
        """The mark of each project (an unknown project has empty counts)."""
        ...
