"""build_server(settings) -> MCPServer: the MCP composition root."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from mcp.server import MCPServer
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings

from memory_core.embeddings import LazyEmbedder
from memory_core.ports import Clock
from server import prompts, resources
from server import scheduler as maintenance_scheduler
from server.app_context import AppContext, LiveContext
from server.container import Container, open_container
from server.settings import Settings
from server.surface import MemstrataServer
from server.tools import admin, conversations, knowledge, memories, toolsets

__all__ = ["INSTRUCTIONS", "build_server", "serve_stdio"]

log = structlog.get_logger(__name__)

VERSION = "0.1.0"

INSTRUCTIONS = """\
memstrata is your long-term memory, kept across conversations.
- At the start of a task, call `load_context` to see what was used recently.
- Before answering from memory, call `search` (it matches meaning as well as words) or
  `recall` (a fact's exact key).
- When you learn something durable, store it: `learn` for facts (key -> value), `append` with
  layer "procedural" for "when X, do Y" rules, "episodic" for events, "working" for scratch.
- Memories age from ACTIVE to RECENT, ARCHIVED and EXPIRED when unused; only EXPIRED ones are
  ever pruned. Tools take an optional `project` to keep unrelated work apart.
- To keep a whole conversation across restarts, `start_session` and record it with
  `add_session_entry`; `get_session_context` reads it back, older parts summarised.
- Per-user rules (`preferences_find`, `playbook_find`) and a tenant's documents
  (`search_business_context`) are scoped by the user or tenant you name.
"""


def _start_scheduler(container: Container, runs: maintenance_scheduler.JobRuns) -> Any | None:
    """Start the maintenance jobs (None when disabled); needs the running loop."""
    scheduler = maintenance_scheduler.build_scheduler(container, runs)
    if scheduler is not None:
        scheduler.start()
        log.info("scheduler.started", jobs=[j.id for j in scheduler.get_jobs()])
    return scheduler


def build_server(
    settings: Settings,
    *,
    clock: Clock | None = None,
    embedder: LazyEmbedder | None = None,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
    runtime_toolsets: bool = True,
    live: LiveContext | None = None,
) -> MemstrataServer:
    """Build the MCP server; the store opens (and the scheduler starts) in its lifespan.

    `token_verifier` and `auth` turn on bearer auth for HTTP (see server.http.app).
    `runtime_toolsets` registers `enable_toolset`; HTTP turns it off, because one HTTP server
    serves many clients and one client's choice must not change another's tool list.
    `live` receives the lifespan's context while it runs (the dashboard reads it).
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with open_container(settings, clock, embedder=embedder) as container:
            if container.embedder is not None and settings.embedding_preload:
                # A thread loads the model; `initialize` and `tools/list` do not wait.
                container.embedder.start()
            if container.indexer is not None:
                # Rows without vectors (imports, keyword-only periods) are embedded once the
                # model is ready; the first searches wait for it (bounded: embedding_wait).
                container.indexer.backfill_when_ready()
            runs = maintenance_scheduler.JobRuns()
            scheduler = _start_scheduler(container, runs)
            context = AppContext(container=container, scheduler=scheduler, runs=runs)
            if live is not None:
                live.current = context
            try:
                yield context
            finally:
                if live is not None:
                    live.current = None
                if scheduler is not None:
                    scheduler.shutdown(wait=False)
                    log.info("scheduler.stopped")
                if container.indexer is not None:
                    # Stops the backfill too, before the database closes.
                    await container.indexer.aclose()
                if container.embedder is not None:
                    await container.embedder.settle(max_wait=10)

    mcp = MemstrataServer(
        "memstrata",
        title="memstrata memory",
        version=VERSION,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        token_verifier=token_verifier,
        auth=auth,
        toolsets=settings.enabled_toolsets,
    )
    memories.register(mcp, settings)
    admin.register(mcp, settings)
    conversations.register(mcp, settings)
    knowledge.register(mcp, settings)
    if runtime_toolsets:
        toolsets.register(mcp, settings)
    resources.register(mcp, settings)
    prompts.register(mcp, settings)
    return mcp


def serve_stdio(settings: Settings) -> None:
    """Serve over stdio (Claude Desktop, Claude Code); stdout carries only MCP messages."""
    from server.logging import configure_logging

    mcp = build_server(settings)
    configure_logging(settings.log_level, settings.log_format)  # after MCPServer's own setup
    log.info("server.starting", transport="stdio", db=settings.store_location)
    mcp.run("stdio")
