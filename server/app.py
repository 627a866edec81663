"""build_server(settings) -> MCPServer: the MCP composition root."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import structlog
from mcp.server import MCPServer
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings

from memory_core.embeddings import LazyEmbedder
from memory_core.ports import Clock
from server import scheduler as maintenance_scheduler
from server.app_context import AppContext, LiveContext
from server.capabilities import prompts, resources
from server.container import Container, open_container
from server.live import LiveUpdates
from server.protocol.instructions import instructions_for
from server.protocol.surface import MemstrataServer
from server.settings import Settings
from server.toolsets import Toolset

__all__ = ["StdioHandover", "build_server", "serve_stdio"]

log = structlog.get_logger(__name__)

VERSION = "0.1.0"


# The tool modules (server/tools/) and the toolsets their tools belong to, in listing order;
# a module is imported only once one of its toolsets is enabled or a tool name is looked up
# (server.protocol.surface). tests/server/test_toolsets.py holds each module to its toolsets.
TOOL_MODULES: tuple[tuple[str, frozenset[Toolset]], ...] = (
    ("memories", frozenset({Toolset.CORE, Toolset.BULK, Toolset.MAINTENANCE})),
    ("admin", frozenset({Toolset.MAINTENANCE})),
    ("conversations", frozenset({Toolset.CONVERSATIONS})),
    ("scratchpad", frozenset({Toolset.SCRATCHPAD})),
    ("preferences", frozenset({Toolset.PREFERENCES})),
    ("business", frozenset({Toolset.DOCUMENTS})),
    ("truth", frozenset({Toolset.CURATION})),
)

# Over stdio, the model preload and the scheduler start once the first `tools/list` has been
# answered, or this long after the store opened if no client lists tools.
WARM_UP_FALLBACK_S = 2.0


def _start_scheduler(container: Container, runs: maintenance_scheduler.JobRuns) -> Any | None:
    """Start the maintenance jobs (None when disabled); needs the running loop."""
    scheduler = maintenance_scheduler.build_scheduler(container, runs)
    if scheduler is not None:
        scheduler.start()
        log.info("scheduler.started", jobs=[j.id for j in scheduler.get_jobs()])
    return scheduler


def _warm_up(settings: Settings, context: AppContext) -> None:
    """Start the model preload (when configured), the maintenance scheduler, and the GC.

    The console script starts with the cyclic garbage collector off (server.cli.main): the
    start-up only creates objects that live as long as the server.
    """
    gc.enable()
    container = context.container
    if container.embedder is not None and settings.embedding_preload:
        # A thread loads the model; requests do not wait for it (searches do, bounded).
        container.embedder.start()
    context.scheduler = _start_scheduler(container, context.runs)


async def _warm_up_after_listing(
    mcp: MemstrataServer, settings: Settings, context: AppContext
) -> None:
    """Warm up once the first `tools/list` is answered (or after WARM_UP_FALLBACK_S).

    The handshake needs neither the model nor the scheduler, and the preload thread's imports
    (numpy, onnxruntime) hold the interpreter lock: started before the handshake, they slowed
    the `tools/list` answer by ~40 ms (issue 21). A tool call that needs the model before then
    loads it itself (LazyEmbedder), as it does with preloading off.
    """
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(mcp.first_listing(), WARM_UP_FALLBACK_S)
    _warm_up(settings, context)


async def _listen_for_hooks(container: Container, warming: asyncio.Task[None] | None) -> None:
    """Serve the Claude Code hooks on this store's socket (server.hooks.listener), once warm.

    After the warm-up: over stdio the first `tools/list` comes first, and the listener's
    imports would delay it.
    """
    if warming is not None:
        await asyncio.wait({warming})
    from server.hooks.listener import ListenerParts, serve_hooks

    try:
        await serve_hooks(ListenerParts.of(container))
    except Exception:  # the hooks then take their direct path; the server serves on
        log.exception("hooks.listener_failed")


async def _stop(context: AppContext, *tasks: asyncio.Task[None] | None) -> None:
    """Stop what the lifespan started, before the store closes."""
    for task in tasks:
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if context.scheduler is not None:
        context.scheduler.shutdown(wait=False)
        log.info("scheduler.stopped")
    container = context.container
    if container.indexer is not None:
        # Stops the backfill too, before the database closes.
        await container.indexer.aclose()
    if container.embedder is not None:
        await container.embedder.settle(max_wait=10)


def build_server(
    settings: Settings,
    *,
    clock: Clock | None = None,
    embedder: LazyEmbedder | None = None,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
    runtime_toolsets: bool = True,
    live: LiveContext | None = None,
    warm_up_after_listing: bool = False,
    hook_listener: bool = False,
) -> MemstrataServer:
    """Build the MCP server; the store opens (and the scheduler starts) in its lifespan.

    `token_verifier` and `auth` turn on bearer auth for HTTP (see server.http.app).
    `runtime_toolsets` registers `enable_toolset`; HTTP turns it off, because one HTTP server
    serves many clients and one client's choice must not change another's tool list.
    `live` receives the lifespan's context while it runs (the dashboard reads it).
    `warm_up_after_listing` starts the model preload and the scheduler once the first
    `tools/list` is answered instead of when the store opens (stdio: a process per
    conversation, whose start the client waits for).
    `hook_listener` answers Claude Code hooks on a per-user socket once started
    (server.hooks.listener; `memstrata serve`, stdio and HTTP).
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with open_container(settings, clock, embedder=embedder, serving=True) as container:
            if container.indexer is not None:
                # Rows without vectors (imports, keyword-only periods) are embedded once the
                # model is ready; the first searches wait for it (bounded: embedding_wait).
                container.indexer.backfill_when_ready()
            context = AppContext(
                container=container, scheduler=None, runs=maintenance_scheduler.JobRuns()
            )
            warming = None
            if warm_up_after_listing:
                warming = asyncio.create_task(_warm_up_after_listing(mcp, settings, context))
            else:
                _warm_up(settings, context)
            listening = None
            if hook_listener:
                listening = asyncio.create_task(_listen_for_hooks(container, warming))
            if live is not None:
                live.current = context
            try:
                yield context
            finally:
                if live is not None:
                    live.current = None
                await following.stop()
                await _stop(context, listening, warming)

    # Resource subscriptions and event log lines (server.live), over stdio and HTTP.
    following = LiveUpdates(token_verifier)
    mcp = MemstrataServer(
        "memstrata",
        title="memstrata memory",
        version=VERSION,
        instructions=instructions_for(
            settings.client, settings.enabled_toolsets, runtime_toolsets=runtime_toolsets
        ),
        lifespan=lifespan,
        token_verifier=token_verifier,
        auth=auth,
        toolsets=settings.enabled_toolsets,
        subscriptions=following.bus,
    )
    following.register(mcp)
    for module, served in TOOL_MODULES:
        mcp.defer_module(served, _registration(module, mcp, settings))
    if runtime_toolsets:
        mcp.defer_module({Toolset.CORE}, _registration("toolsets", mcp, settings))
    resources.register(mcp, settings)
    prompts.register(mcp, settings)
    return mcp


def _registration(module: str, mcp: MemstrataServer, settings: Settings) -> Callable[[], None]:
    """Import server.tools.<module> and register its tools, when called."""

    def register() -> None:
        importlib.import_module(f"server.tools.{module}").register(mcp, settings)

    return register


class StdioHandover(Protocol):
    """A stdio wire that answered the client before the SDK was built (server.cli.lean_serve)."""

    def hand_over(self) -> bool:
        """Give the conversation to the SDK's stdio transport; False: nothing left to serve."""
        ...

    def finish(self) -> None:
        """After serving: let the last of the SDK's messages reach the client."""
        ...


def serve_stdio(settings: Settings, early: StdioHandover | None = None) -> None:
    """Serve over stdio (Claude Desktop, Claude Code); stdout carries only MCP messages.

    `early`: the wire that has answered the client's opening so far; the SDK's stdio
    transport takes the conversation over from it.
    """
    from server.logging import configure_logging

    mcp = build_server(settings, warm_up_after_listing=True, hook_listener=True)
    configure_logging(settings.log_level, settings.log_format)  # after MCPServer's own setup
    log.info("server.starting", transport="stdio", db=settings.store_location)
    if early is None:
        mcp.run("stdio")
        return
    if not early.hand_over():
        return  # the client answered and gone, nothing waiting
    try:
        mcp.run("stdio")
    finally:
        early.finish()
