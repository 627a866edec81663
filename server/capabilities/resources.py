"""MCP resources: a project's stats, recent context and single memories (JSON), sessions (text).

Sessions, stats and context can be subscribed to (server.live).
"""

from mcp.server.mcpserver import Context
from mcp.types import Resource

from memory_core.errors import InvalidInputError
from memory_core.services.session_state import SessionStateService, session_view_text
from server.app_context import AppContext
from server.container import Container
from server.protocol.errors import domain_errors_as_resource_errors
from server.protocol.surface import MemstrataServer
from server.schemas.memories import ContextOut, MemoryOut
from server.schemas.stats import StatsOut
from server.settings import Settings

__all__ = ["register"]

JSON = "application/json"
TEXT = "text/plain"


def _container(ctx: Context) -> Container:
    # Resources take a bare Context (the SDK does not detect Context[AppContext] there).
    state = ctx.request_context.lifespan_context
    assert isinstance(state, AppContext)
    return state.container


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register memory://{project}/stats, /context, /snapshot/{id} and /session/{session_id}.

    The default project's stats and context are also listed (resources/list), so clients
    that offer resources by name (@-mentions) show them; the templates serve the reads.
    """
    context_limit = min(10, settings.limits.max_limit)
    default = settings.project
    mcp.listed_resources += [
        Resource(
            uri=f"memory://{default}/stats",
            name=f"{default} stats",
            title=f"Memory statistics ({default})",
            description=f"Counts per tier and layer, sizes and health notes of {default!r}.",
            mime_type=JSON,
        ),
        Resource(
            uri=f"memory://{default}/context",
            name=f"{default} context",
            title=f"Recent context ({default})",
            description=f"The memories of {default!r} used most recently (marks them as used).",
            mime_type=JSON,
        ),
    ]

    @mcp.resource(
        "memory://{project}/stats", name="stats", title="Memory statistics", mime_type=JSON
    )
    async def stats(project: str, ctx: Context) -> str:
        """Counts per tier and layer, sizes, dates and health notes of a project."""
        app = _container(ctx)
        with domain_errors_as_resource_errors(f"memory://{project}/stats"):
            report = await app.maintenance.stats(project)
        return StatsOut.of(report).model_dump_json(indent=2)

    @mcp.resource(
        "memory://{project}/context", name="context", title="Recent context", mime_type=JSON
    )
    async def context(project: str, ctx: Context) -> str:
        """What `load_context` returns: the most recently used memories (marked as used)."""
        app = _container(ctx)
        with domain_errors_as_resource_errors(f"memory://{project}/context"):
            result = await app.memories.load_context(project, limit=context_limit)
        return ContextOut.of(project, result).model_dump_json(indent=2)

    @mcp.resource(
        "memory://{project}/snapshot/{memory_id}",
        name="snapshot",
        title="One memory",
        mime_type=JSON,
    )
    async def snapshot(project: str, memory_id: str, ctx: Context) -> str:
        """One memory by id (reading it counts as using it)."""
        app = _container(ctx)
        uri = f"memory://{project}/snapshot/{memory_id}"
        with domain_errors_as_resource_errors(uri):
            if not memory_id.isdigit():
                raise InvalidInputError("memory_id", "must be a whole number, as in search hits")
            memory = await app.memories.read(project, int(memory_id))
        return MemoryOut.of(memory).model_dump_json(indent=2)

    session_uri = "memory://{project}/session/{session_id}"

    @mcp.resource(session_uri, name="session", title="A session's memory state", mime_type=TEXT)
    async def session(project: str, session_id: str, ctx: Context) -> str:
        """A session's memory state, as text written for a model.

        Entries active and compressed, summaries with sizes and ratios, compressions by
        source, cached tool results with the exchanges they have left, token totals, and what
        get_session_context hands the model now.
        """
        with domain_errors_as_resource_errors(f"memory://{project}/session/{session_id}"):
            return await _session_view(_container(ctx), project, session_id)


async def _session_view(app: Container, project: str, session_id: str) -> str:
    """The session view through the container's conversation service and store."""
    if app.backend is None:
        raise InvalidInputError("session_id", "conversation memory is not open")
    service = SessionStateService(app.conversations, app.backend.conversations)
    return session_view_text(await service.read(project, session_id))
