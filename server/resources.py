"""MCP resources: a project's stats, its recent context and single memories, as JSON."""

from mcp.server.mcpserver import Context
from mcp.types import Resource

from memory_core.errors import InvalidInputError
from server.app_context import AppContext
from server.container import Container
from server.errors import domain_errors_as_resource_errors
from server.schemas.memories import ContextOut, MemoryOut
from server.schemas.stats import StatsOut
from server.settings import Settings
from server.surface import MemstrataServer

__all__ = ["register"]

JSON = "application/json"


def _container(ctx: Context) -> Container:
    # Resources take a bare Context (the SDK does not detect Context[AppContext] there).
    state = ctx.request_context.lifespan_context
    assert isinstance(state, AppContext)
    return state.container


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register memory://{project}/stats, /context and /snapshot/{id}.

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
