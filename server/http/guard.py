"""ASGI middleware in front of streamable HTTP: auth throttle, body limit, per-token grants.

Why grants are checked here and not in the tools: a JSON-RPC message names the tool and its
`project` argument, so the edge can refuse a call outside a token's grant with HTTP 403 before
any MCP session, tool code or database sees it. Every tool (including ones added later) is
covered by the same rule, read-only-ness comes from the tools' own annotations, and a refused
call is logged once with the token's name (never the token).

Before any of that, a request carrying a bearer token is checked against the throttle of its
client address (server.http.throttle): a held-back address gets 429 whatever the token, and a
token that matches no grant counts as a failure there, on /mcp and on the dashboard's pages
alike. A read-only token's requests run with access recording off, so its reads leave no
mark on the memories' use (access_count, last_accessed): reading is not using.

Refusals are JSON-RPC error objects (`application/json`), which the SDK client and others
turn into an error that shows the message; a bare status would show as "Server returned an
error response", without the limit or the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_core.services.access_recording import access_unrecorded
from server.http.auth import Grant, TokenAuthority
from server.http.throttle import AuthThrottle, peer

__all__ = ["HttpGuard", "refusal"]

log = structlog.get_logger(__name__)

# Tools where an omitted `project` means every project rather than the default one.
ALL_PROJECTS_WHEN_OMITTED = frozenset({"recalculate_memory_tiers"})
# Read-only tools that also write when given this argument (playbook_find copies the best
# playbook into the session's scratchpad): a read-only token may call them without it.
WRITES_WITH_ARGUMENT = {"playbook_find": "session_id"}
RESOURCE_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
RESOURCE_SCHEME = "memory://"
FORBIDDEN_CODE = -32003  # JSON-RPC server-error range; the HTTP status (403) is what counts
THROTTLED_CODE = -32029  # likewise, with 429
INVALID_REQUEST_CODE = -32600  # JSON-RPC's own: the request cannot be taken (too large)


def _project_refusal(grant: Grant, project: object) -> str | None:
    if not isinstance(project, str):
        return "the project must be a string"
    if not grant.allows_project(project):
        return f"project {project!r} is outside this token's grant"
    return None


def refusal(
    grant: Grant,
    message: object,
    *,
    default_project: str,
    read_only_tools: frozenset[str],
    unscoped_tools: frozenset[str] = frozenset(),
) -> str | None:
    """Why `grant` may not send this JSON-RPC message, or None when it may.

    Args:
        grant: The grant of the token that sent the message.
        message: One decoded JSON-RPC message.
        default_project: The project a tool uses when its call names none.
        read_only_tools: Tools annotated read-only (all a read-only token may call).
        unscoped_tools: Tools scoped by user or tenant rather than project, which a
            project-limited token may not call (its grant cannot express their scope).
    """
    if not isinstance(message, Mapping):
        return None  # not JSON-RPC; the transport rejects it
    method = message.get("method")
    params = message.get("params")
    params = params if isinstance(params, Mapping) else {}
    if method == "tools/call":
        return _tool_refusal(grant, params, default_project, read_only_tools, unscoped_tools)
    if method in RESOURCE_METHODS and grant.projects is not None:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri.startswith(RESOURCE_SCHEME):
            return "this token may read only memory://<project>/... resources"
        return _project_refusal(grant, unquote(uri[len(RESOURCE_SCHEME) :].split("/", 1)[0]))
    return None


def _tool_refusal(
    grant: Grant,
    params: Mapping[str, object],
    default_project: str,
    read_only_tools: frozenset[str],
    unscoped_tools: frozenset[str],
) -> str | None:
    """Why `grant` may not make this `tools/call`, or None when it may."""
    tool = params.get("name")
    if not isinstance(tool, str):
        return "the tool name must be a string"
    if grant.read_only and tool not in read_only_tools:
        return f"tool {tool!r} writes, and this token is read-only"
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, Mapping) else {}
    writing = WRITES_WITH_ARGUMENT.get(tool)
    if grant.read_only and writing is not None and arguments.get(writing) not in (None, "null"):
        return f"tool {tool!r} with `{writing}` writes, and this token is read-only"
    if grant.projects is None:
        return None
    if tool in unscoped_tools:
        return f"tool {tool!r} is not scoped by project, and this token is limited to projects"
    project = arguments.get("project")
    # The SDK reads the text "null" as JSON null (the default project), so it never names one.
    if project is None or project == "null":
        if tool in ALL_PROJECTS_WHEN_OMITTED:
            return f"tool {tool!r} without `project` covers every project; name one"
        project = default_project
    return _project_refusal(grant, project)


def _messages(body: bytes) -> Iterable[object]:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return []  # malformed or absurdly deep JSON: the transport answers with an error
    return decoded if isinstance(decoded, list) else [decoded]


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = bytes(value).decode("latin-1")
            if text[:7].lower() == "bearer ":
                return str(text[7:])
    return None


def _rpc_error(request_id: object, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error object (clients put their own request's id on a null one)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


async def _respond(
    send: Send, status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
) -> None:
    body = json.dumps(payload).encode()
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


class HttpGuard:
    """Hold back failed tokens (429); refuse oversized bodies (413), calls outside grants (403)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authority: TokenAuthority | None,
        default_project: str,
        read_only_tools: frozenset[str],
        max_body_bytes: int,
        unscoped_tools: frozenset[str] = frozenset(),
        throttle: AuthThrottle | None = None,
    ) -> None:
        self.app = app
        self.throttle = throttle or AuthThrottle()
        self.authority = authority
        self.default_project = default_project
        self.read_only_tools = read_only_tools
        self.unscoped_tools = unscoped_tools
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run one ASGI request through the checks, then the wrapped app."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        grant = None
        if self.authority is not None and token is not None:
            client = peer(scope)
            wait_s = self.throttle.wait_s(client)
            if wait_s:
                # Not logged per request (the hold was logged when it began).
                message = (
                    f"Too many failed authentications from this address: try again in {wait_s} s."
                )
                await _respond(
                    send,
                    429,
                    _rpc_error(None, THROTTLED_CODE, message),
                    {"retry-after": str(wait_s)},
                )
                return
            grant = self.authority.lookup(token)
            if grant is None:
                # The app answers it (401, the SDK's own shape on /mcp); counted here, once.
                log.warning("auth.failed", client_address=client, path=scope.get("path"))
                self.throttle.failed(client)
        if grant is not None and grant.read_only:
            with access_unrecorded():
                await self._checked(scope, receive, send, grant)
        else:
            await self._checked(scope, receive, send, grant)

    async def _checked(
        self, scope: Scope, receive: Receive, send: Send, grant: Grant | None
    ) -> None:
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive)
        if body is None:
            await self._too_large(scope, send)
            return
        if grant is not None:
            for message in _messages(body):
                reason = refusal(
                    grant,
                    message,
                    default_project=self.default_project,
                    read_only_tools=self.read_only_tools,
                    unscoped_tools=self.unscoped_tools,
                )
                if reason is not None:
                    await self._forbid(send, grant, message, reason)
                    return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None once it exceeds the limit (checked before buffering it)."""
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the app sees an empty body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _too_large(self, scope: Scope, send: Send) -> None:
        """413 with a JSON-RPC error that names the limit and the setting that raises it."""
        declared = _declared_length(scope)
        size = f"of {declared:,} bytes " if declared is not None else ""
        log.warning("http.body_too_large", limit=self.max_body_bytes, declared=declared)
        message = (
            f"Request too large: this server accepts HTTP request bodies up to "
            f"{self.max_body_bytes:,} bytes (MEMSTRATA_HTTP_MAX_BODY_BYTES) and this request "
            f"{size}is over it. Send less per call, e.g. a long document in parts."
        )
        await _respond(send, 413, _rpc_error(None, INVALID_REQUEST_CODE, message))

    async def _forbid(self, send: Send, grant: Grant, message: object, reason: str) -> None:
        details = message if isinstance(message, Mapping) else {}
        params = details.get("params")
        params = params if isinstance(params, Mapping) else {}
        log.warning(
            "auth.refused",
            client=grant.name,
            method=details.get("method"),
            tool=params.get("name"),
            reason=reason,
        )
        await _respond(
            send, 403, _rpc_error(details.get("id"), FORBIDDEN_CODE, f"Forbidden: {reason}.")
        )


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
