"""The ASGI app `serve --http` runs: MCP streamable HTTP behind auth, host checks and limits.

The dashboard (server.http.dashboard) is mounted beside /mcp in the same app and process.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import structlog
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from server.app import build_server
from server.app_context import LiveContext
from server.http.auth import AuthConfigError, TokenAuthority, is_loopback, load_authority
from server.http.guard import HttpGuard
from server.http.throttle import AuthThrottle
from server.logging import configure_logging
from server.settings import Settings

__all__ = [
    "HttpBindError",
    "HttpStartError",
    "build_http_app",
    "http_authority",
    "listen",
    "proxy_options",
    "serve_http",
    "transport_security",
]

log = structlog.get_logger(__name__)

_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class HttpStartError(SystemExit):
    """HTTP cannot start safely (bad token settings, or no token beyond loopback).

    A SystemExit: the CLI ends with the reason on stderr and status 1, not a traceback.
    """


class HttpBindError(Exception):
    """The HTTP address cannot be bound: in use by another process, or not permitted."""


def listen(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """Bind host:port as uvicorn would, but report failure instead of exiting with 3.

    Uvicorn's own bind logs the error and exits with its STARTUP_FAILURE (3), which the
    CLI documents as "not found"; binding first also lets the CLI say "serving" truthfully.

    Raises:
        HttpBindError: The address is in use or may not be bound (the reason is included).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(backlog)  # connections queue from here on, before uvicorn accepts them
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise HttpBindError(f"cannot listen on {host}:{port}: {reason}") from exc
    return sock


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def transport_security(settings: Settings, host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection: the Host and Origin headers a request may carry.

    Trigger: bound beyond loopback and no MEMSTRATA_HTTP_ALLOWED_HOSTS. Why: the names clients
    use for this machine are unknown, so any Host list would refuse them all. Outcome: Host is
    not checked (tokens still are), and a warning says how to turn the check on.
    """
    hosts, origins = _split(settings.http_allowed_hosts), _split(settings.http_allowed_origins)
    if is_loopback(host):
        hosts, origins = _LOOPBACK_HOSTS + hosts, _LOOPBACK_ORIGINS + origins
    elif not hosts:
        log.warning("http.host_check_off", hint="set MEMSTRATA_HTTP_ALLOWED_HOSTS")
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def http_authority(settings: Settings, host: str, *, insecure: bool) -> TokenAuthority | None:
    """The bearer tokens HTTP will check (None: no auth), or the reason HTTP may not start.

    `serve --http` asks before it opens the store, so a refusal creates no database.

    Raises:
        HttpStartError: The token settings are invalid, or `host` is not loopback, no token
            is configured and not `insecure`.
    """
    try:
        authority = load_authority(settings)
    except AuthConfigError as exc:
        raise HttpStartError(f"memstrata: {exc}") from exc
    if authority is None and not is_loopback(host) and not insecure:
        raise HttpStartError(
            f"memstrata: refusing to serve HTTP on {host} without authentication; set "
            "MEMSTRATA_AUTH_TOKENS or MEMSTRATA_AUTH_TOKENS_FILE, or pass --insecure"
        )
    return authority


async def build_http_app(
    settings: Settings,
    host: str,
    port: int,
    *,
    insecure: bool = False,
    hook_listener: bool = False,
) -> ASGIApp:
    """The streamable HTTP app with bearer auth (when tokens are configured) and the guard.

    `hook_listener`: also answer Claude Code hooks on the store's socket (server.app).

    Raises:
        HttpStartError: The token settings are invalid, or `host` is not loopback, no token
            is configured and not `insecure`.
    """
    authority = http_authority(settings, host, insecure=insecure)
    auth = None
    if authority is not None:
        # No OAuth server and no resource metadata: the issuer URL is required by the model
        # but only used for those, so it names this server.
        auth = AuthSettings(issuer_url=f"http://{host}:{port}", resource_server_url=None)
    live = LiveContext()
    mcp = build_server(
        settings,
        token_verifier=authority,
        auth=auth,
        runtime_toolsets=False,
        live=live,
        hook_listener=hook_listener,
    )
    tools = await mcp.list_tools()
    read_only = frozenset(
        t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint
    )
    # Tools scoped by user or tenant, not project: a project-limited token cannot use them.
    unscoped = frozenset(t.name for t in tools if "project" not in t.input_schema["properties"])
    # Stateless: every request stands alone, so no client can pile up sessions (each one a
    # task and its buffers, up to the SDK's 10,000) and lock every other client out; the
    # tools need no server-to-client requests, and progress still streams in the response.
    security = transport_security(settings, host)
    # One count of failed tokens per client address for /mcp and the dashboard alike, so a
    # client held back on one cannot go on guessing on the other.
    throttle = AuthThrottle()
    app = mcp.streamable_http_app(
        stateless_http=True,
        host=host,
        transport_security=security,
        max_request_body_size=settings.http_max_body_bytes,
    )
    if settings.http_dashboard:
        # Deferred: Jinja2 and the templates load only when the dashboard is served.
        from server.http.dashboard.access import DashboardAccess
        from server.http.dashboard.routes import Dashboard

        dashboard = Dashboard(
            live, DashboardAccess(authority), security, settings.default_project(), throttle
        )
        # After /mcp: the dashboard's routes never shadow the MCP endpoint.
        app.router.routes.extend(dashboard.routes())
    log.info(
        "http.auth",
        enabled=authority is not None,
        tokens=[g.name for g in authority.grants] if authority else [],
    )
    return HttpGuard(
        app,
        authority=authority,
        default_project=settings.default_project(),
        read_only_tools=read_only,
        unscoped_tools=unscoped,
        max_body_bytes=settings.http_max_body_bytes,
        throttle=throttle,
    )


def proxy_options(settings: Settings) -> dict[str, Any]:
    """Uvicorn's proxy-header options: X-Forwarded-* believed only from the listed proxies.

    Trigger: uvicorn's defaults (proxy_headers on, FORWARDED_ALLOW_IPS or 127.0.0.1 and ::1
    trusted). Why: then any local process, or anything a local proxy passes on unchanged,
    chooses its own client address by sending X-Forwarded-For, and so walks out of the
    failed-token throttle. Outcome: off unless MEMSTRATA_HTTP_TRUSTED_PROXIES lists proxies;
    with them, the client is the address the nearest untrusted hop names (uvicorn's rule).
    """
    proxies = _split(settings.http_trusted_proxies)
    if not proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": proxies}


async def serve_http(
    settings: Settings,
    host: str,
    port: int,
    *,
    insecure: bool = False,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve streamable HTTP at http://host:port/mcp under our own uvicorn (logs stay JSON).

    Bearer tokens, per-token grants, Host/Origin checks and the body limit: build_http_app.
    The port is bound before `announce(url)` is called, so "serving at" is only said once
    it is true.

    Raises:
        HttpStartError: Invalid tokens, or not loopback without a token nor `insecure`.
        HttpBindError: The address is in use or may not be bound.
    """
    import uvicorn  # only HTTP needs it; stdio start-up skips the import (~57 ms)

    app = await build_http_app(settings, host, port, insecure=insecure, hook_listener=True)
    configure_logging(settings.log_level, settings.log_format)
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, **proxy_options(settings)
    )
    sock = listen(host, port)
    url = f"http://{host}:{port}/mcp"
    log.info("server.starting", transport="http", url=url, db=settings.store_location)
    if announce is not None:
        announce(url)
    with sock:
        await uvicorn.Server(config).serve(sockets=[sock])
