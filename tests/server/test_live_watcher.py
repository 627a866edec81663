"""server.live: which URIs can be followed, and the watcher's ticks against fake marks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from memory_core.ports.change_marks import ProjectMark, SessionKey, SessionMark
from memory_core.services.session_state import SessionStateService
from server.live.uris import FollowedUri, parse_followed
from server.live.watcher import Follower, Watcher


def test_followable_uris_are_sessions_stats_and_context() -> None:
    assert parse_followed("memory://p/stats") == FollowedUri("memory://p/stats", "stats", "p")
    assert parse_followed("memory://p/context") == FollowedUri("memory://p/context", "context", "p")
    named = parse_followed("memory://api%40github.com%2Facme/session/s%201")
    assert named is not None and (named.project, named.session_id) == (
        "api@github.com/acme",
        "s 1",
    )
    for uri in ("memory://p/snapshot/3", "memory://p/session/", "file:///p/stats", "memory:///x"):
        assert parse_followed(uri) is None, uri


def mark(entries: int) -> SessionMark:
    return SessionMark("c", "u", entries, 0, 0, 0, False, (0, 0, ""))


class FakeMarks:
    def __init__(self) -> None:
        self.gate_value = 0
        self.entries = 0
        self.reads = 0

    async def gate(self) -> object | None:
        return self.gate_value

    async def sessions(self, keys: Sequence[SessionKey]) -> dict[SessionKey, SessionMark | None]:
        self.reads += 1
        return {k: mark(self.entries) for k in keys}

    async def projects(self, projects: Sequence[str]) -> dict[str, ProjectMark]:
        return {p: ProjectMark((), "") for p in projects}


async def test_a_tick_notifies_changes_only_past_a_moved_gate_and_to_followers() -> None:
    published: list[str] = []

    async def publish(uri: str) -> None:
        published.append(uri)

    heard: list[str] = []

    async def update(uri: str) -> None:
        heard.append(uri)

    async def no_log(level: str, line: str) -> None:
        raise AssertionError("no level was set")

    marks = FakeMarks()
    watcher = Watcher(publish)
    watcher.attach(marks, cast(SessionStateService, cast(Any, None)))
    uri = parse_followed("memory://p/session/s1")
    assert uri is not None
    follower = Follower(send_log=no_log, send_update=update)
    await watcher.follow("conn", follower, uri)
    try:
        await watcher.tick()  # the gate moved from "never read": the marks are read
        assert heard == [] and marks.reads == 2
        marks.entries = 1
        await watcher.tick()  # a write that did not move the gate is not looked for
        assert heard == [] and marks.reads == 2
        marks.gate_value = 1
        await watcher.tick()
        assert heard == [uri.uri] and published == []  # no listen stream follows it

        watcher.unfollow("conn", uri.uri)
        marks.entries, marks.gate_value = 2, 2
        await watcher.tick()
        assert heard == [uri.uri]
    finally:
        await watcher.stop()
