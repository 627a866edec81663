"""Resource subscriptions and event log lines: the MCP side of following a session or project.

Two eras of the protocol, one watcher (server.live.watcher):

- handshake era (2025-xx, `initialize`; the Inspector, Claude Desktop, Claude Code over
  stdio): `resources/subscribe` and `resources/unsubscribe` register the connection for a
  URI, `notifications/resources/updated` goes to it on change; `logging/setLevel` turns on
  `notifications/message` event lines for the sessions it follows.
- 2026-07-28 (`server/discover`; the SDK client's default): a `subscriptions/listen` stream
  names its URIs; the SDK's ListenHandler serves it and this module registers its URIs with
  the watcher, which publishes `ResourceUpdated` on the subscription bus. A listen request
  that carries the `_meta` log level gets the event lines on its own stream.

Over streamable HTTP (stateless: every POST stands alone) only the listen stream can carry
notifications after its request: `resources/subscribe` there is refused with a message that
says to listen instead, and `logging/setLevel` is accepted but changes nothing.

A token limited to projects may follow only their resources (server.live.uris.may_follow).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from memory_core.ports.change_marks import ChangeMarks
from memory_core.services.session_state import SessionStateService
from server.app_context import AppContext
from server.live.uris import FOLLOWABLE, FollowedUri, may_follow, parse_followed
from server.live.watcher import LOG_LEVELS, Follower, Watcher
from server.protocol.surface import MemstrataServer

__all__ = ["FORBIDDEN_CODE", "LiveUpdates"]

FORBIDDEN_CODE = -32003  # as server.http.guard answers a call outside a token's grant
LOGGER = "memstrata.session"

Ctx = ServerRequestContext[AppContext, Any]


def _marks_of(app: AppContext) -> tuple[ChangeMarks, SessionStateService]:
    """The watcher's reads on the container's conversation store."""
    container = app.container
    backend = container.backend
    assert backend is not None, "the live watcher needs an opened backend"
    store = backend.conversations
    marks: ChangeMarks = store.change_marks()  # type: ignore[attr-defined]
    return marks, SessionStateService(container.conversations, store)


def _log_line(level: str, line: str) -> types.LoggingMessageNotification:
    return types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=level, data=line, logger=LOGGER)
    )


class LiveUpdates:
    """The subscription bus, the watcher, and the handlers that feed it."""

    def __init__(self, grants: object | None = None) -> None:
        """`grants`: the HTTP token verifier (None over stdio; see uris.may_follow)."""
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._grants = grants
        self.watcher = Watcher(self._publish)

    async def _publish(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))

    def register(self, mcp: MemstrataServer) -> None:
        """Serve subscribe, unsubscribe, setLevel and a grant-checked listen on `mcp`.

        `mcp` must have been built with `subscriptions=self.bus`.
        """
        low = mcp._lowlevel_server
        low.add_request_handler(
            "resources/subscribe", types.SubscribeRequestParams, self._subscribe
        )
        low.add_request_handler(
            "resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe
        )
        low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        low.add_request_handler(
            "subscriptions/listen", types.SubscriptionsListenRequestParams, self._listen_checked
        )

    async def stop(self) -> None:
        """Stop the watcher and end the listen streams (the server is stopping)."""
        self._listen.close()
        await self.watcher.stop()

    def _followed(self, uri: str) -> FollowedUri:
        followed = parse_followed(uri)
        if followed is None:
            raise MCPError(
                types.INVALID_PARAMS, f"Cannot subscribe to {uri!r}: only {FOLLOWABLE} can."
            )
        if not may_follow(self._grants, followed.project):
            raise MCPError(
                FORBIDDEN_CODE,
                f"Forbidden: project {followed.project!r} is outside this token's grant.",
            )
        return followed

    def _attach(self, ctx: Ctx) -> None:
        self.watcher.attach(*_marks_of(ctx.lifespan_context))

    # --- handshake era -------------------------------------------------------------------

    def _connection_follower(self, session: ServerSession) -> tuple[object, Follower]:
        # ServerSession is a per-request proxy; the connection behind it is what a later
        # notification goes to, so it keys the follower.
        key = session._connection
        follower = self.watcher.follower(key)
        if follower is None:

            async def send_log(level: str, line: str) -> None:
                await session.send_notification(_log_line(level, line))

            follower = Follower(send_log=send_log, send_update=session.send_resource_updated)
        return key, follower

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        followed = self._followed(str(params.uri))
        if not ctx.session.can_send_request:
            # Trigger: stateless streamable HTTP (no session, no standing stream). Why: an
            # update could never reach the client, and the follower would never be dropped.
            raise MCPError(
                types.INVALID_REQUEST,
                "This server cannot send updates after a request ends (stateless HTTP): "
                f"follow {followed.uri} with subscriptions/listen (protocol 2026-07-28).",
            )
        self._attach(ctx)
        key, follower = self._connection_follower(ctx.session)
        await self.watcher.follow(key, follower, followed)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: Ctx, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.watcher.unfollow(ctx.session._connection, str(params.uri))
        return types.EmptyResult()

    async def _set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        if not ctx.session.can_send_request:
            return types.EmptyResult()  # stateless HTTP: no line could reach the client
        self._attach(ctx)
        key, follower = self._connection_follower(ctx.session)
        follower.level = params.level
        await self.watcher.follow(key, follower, None)
        return types.EmptyResult()

    # --- 2026-07-28 ----------------------------------------------------------------------

    async def _listen_checked(
        self, ctx: Ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Check every URI against the grant, follow ours, then serve the SDK's stream."""
        uris = params.notifications.resource_subscriptions or []
        followed: list[FollowedUri] = []
        for uri in uris:
            parsed = parse_followed(uri)
            project = parsed.project if parsed is not None else None
            if project is not None and not may_follow(self._grants, project):
                raise MCPError(
                    FORBIDDEN_CODE,
                    f"Forbidden: project {project!r} is outside this token's grant.",
                )
            if parsed is not None:
                followed.append(parsed)
        if not followed:
            return await self._listen(ctx, params)
        self._attach(ctx)
        allowed = allowed_log_levels(ctx.protocol_version, ctx.meta)
        session, request_id = ctx.session, ctx.request_id

        async def send_log(level: str, line: str) -> None:
            await session.send_notification(_log_line(level, line), related_request_id=request_id)

        levels = [lv for lv in LOG_LEVELS if lv in allowed]
        follower = Follower(send_log=send_log, level=levels[0] if levels else None)
        key = object()
        for each in followed:
            await self.watcher.follow(key, follower, each)
        try:
            return await self._listen(ctx, params)
        finally:
            self.watcher.unfollow(key)
