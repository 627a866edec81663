"""The per-server watcher: notices changes of followed resources, whoever wrote them.

Trigger: a client follows a resource (`resources/subscribe`, or a `subscriptions/listen`
stream naming it). Why a watcher and not a hook in the services: writes come from this
process, from hooks and CLI commands, and from other servers on the same database; comparing
marks of what each followed resource holds catches them all the same way. Outcome: while
anything is followed, one task reads the marks (ports.change_marks) every POLL_S seconds and
notifies on change, so an update reaches a client about POLL_S/2 after the commit on average
and at most ~POLL_S plus a read later. On SQLite the tick first compares `PRAGMA
data_version` and the connection's own change count, so an idle database costs two pragma
reads a second; on PostgreSQL the marks themselves are read (a few index probes per followed
resource). With nothing followed, the task ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from memory_core.ports.change_marks import ChangeMarks, ProjectMark, SessionMark
from memory_core.services.session_state import SessionEvent, SessionStateService
from server.live.uris import FollowedUri

__all__ = ["LOG_LEVELS", "POLL_S", "Follower", "Watcher"]

log = structlog.get_logger(__name__)

POLL_S = 1.0
# The spec's logging levels, least severe first; event lines are sent at EVENT_LEVEL.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
EVENT_LEVEL = "info"

ResourceMark = SessionMark | ProjectMark | None


@dataclass(eq=False)
class Follower:
    """One client connection (handshake era) or one listen stream (2026-07-28).

    `send_update(uri)` tells it a followed resource changed (None: the subscription bus
    tells listen streams, once per change whatever their number); `send_log(level, line)`
    sends an event line when `level` is set. A send that raises ends the follower: its
    client has gone.
    """

    send_log: Callable[[str, str], Awaitable[None]]
    send_update: Callable[[str], Awaitable[None]] | None = None
    uris: dict[str, FollowedUri] = field(default_factory=dict)
    level: str | None = None

    def logs(self) -> bool:
        """Whether event lines are wanted (a level at or below EVENT_LEVEL)."""
        return self.level is not None and LOG_LEVELS.index(self.level) <= LOG_LEVELS.index(
            EVENT_LEVEL
        )


class Watcher:
    """Marks of the followed resources, the followers, and the polling task."""

    def __init__(self, publish: Callable[[str], Awaitable[None]]) -> None:
        self._publish = publish  # a resource-updated event for every listen stream
        self._followers: dict[object, Follower] = {}
        self._marks: dict[str, ResourceMark] = {}
        self._gate: object | None = None
        self._task: asyncio.Task[None] | None = None
        self._sources: tuple[ChangeMarks, SessionStateService] | None = None

    def attach(self, marks: ChangeMarks, state: SessionStateService) -> None:
        """Give the watcher its reads (once the store is open)."""
        self._sources = (marks, state)

    def follower(self, key: object) -> Follower | None:
        """The follower registered under `key`, if any."""
        return self._followers.get(key)

    async def follow(self, key: object, follower: Follower, uri: FollowedUri | None) -> None:
        """Register `follower` (again) under `key`, following `uri` too; start the task.

        The resource's mark is read now, before the subscription is answered, so a write
        made right after the answer is a change from it.
        """
        self._followers[key] = follower
        if uri is not None:
            follower.uris[uri.uri] = uri
            if uri.uri not in self._marks:
                self._marks[uri.uri] = (await self._read([uri]))[uri.uri]
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="memstrata-live-watcher")

    def unfollow(self, key: object, uri: str | None = None) -> None:
        """Stop following `uri` (None: everything, and forget the follower)."""
        follower = self._followers.get(key)
        if follower is None:
            return
        if uri is None:
            del self._followers[key]
        else:
            follower.uris.pop(uri, None)
            if not follower.uris and follower.level is None:
                del self._followers[key]
        followed = {u for f in self._followers.values() for u in f.uris}
        for gone in set(self._marks) - followed:
            del self._marks[gone]

    async def stop(self) -> None:
        """End the task (the server is stopping)."""
        self._followers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while self._followers:
            await asyncio.sleep(POLL_S)
            try:
                await self.tick()
            except Exception:  # a failed read is retried next tick; the server serves on
                log.exception("live.watch_failed")

    async def tick(self) -> None:
        """Compare the marks once and notify what changed."""
        if self._sources is None or not self._marks:
            return
        marks, _ = self._sources
        gate = await marks.gate()
        if gate is not None and gate == self._gate:
            return
        followed = {u.uri: u for f in self._followers.values() for u in f.uris.values()}
        now = await self._read(list(followed.values()))
        self._gate = gate
        for uri, mark in now.items():
            before = self._marks.get(uri)
            if uri not in self._marks or before == mark:
                continue
            self._marks[uri] = mark
            await self._changed(followed[uri], before, mark)

    async def _read(self, uris: list[FollowedUri]) -> dict[str, ResourceMark]:
        if self._sources is None:
            return {u.uri: None for u in uris}
        marks, _ = self._sources
        keys = sorted({(u.project, u.session_id) for u in uris if u.session_id is not None})
        projects = sorted({u.project for u in uris if u.session_id is None})
        sessions = await marks.sessions(keys) if keys else {}
        counts = await marks.projects(projects) if projects else {}
        return {
            u.uri: sessions[(u.project, u.session_id)]
            if u.session_id is not None
            else counts[u.project]
            for u in uris
        }

    async def _changed(self, uri: FollowedUri, before: ResourceMark, after: ResourceMark) -> None:
        followers = [(k, f) for k, f in self._followers.items() if uri.uri in f.uris]
        log.debug("live.changed", uri=uri.uri, followers=len(followers))
        if any(f.send_update is None for _, f in followers):
            await self._publish(uri.uri)
        events: list[SessionEvent] = []
        if uri.session_id is not None and any(f.logs() for _, f in followers):
            assert self._sources is not None
            events = await self._sources[1].events(
                uri.project,
                uri.session_id,
                before if isinstance(before, SessionMark) else None,
                after if isinstance(after, SessionMark) else None,
            )
        for key, follower in followers:
            try:
                if follower.send_update is not None:
                    await follower.send_update(uri.uri)
                if follower.logs():
                    for event in events:
                        await follower.send_log(EVENT_LEVEL, event.line())
            except Exception as exc:  # its client went away
                log.info("live.follower_gone", uri=uri.uri, error=exc.__class__.__name__)
                self.unfollow(key)
