import pytest
from mcp.server.mcpserver.exceptions import ToolError

from memory_core import errors
from server.protocol.errors import MAPPED_ERRORS, domain_errors_as_tool_errors


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_domain_error_has_a_mapping() -> None:
    assert _subclasses(errors.MemoryCoreError) == set(MAPPED_ERRORS)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (errors.MemoryNotFoundError(7, "p"), "No memory with id 7"),
        (errors.NotFoundError("thing"), "Not found"),
        (errors.InvalidQueryError("query", "empty"), "Retry with plain words"),
        (errors.InvalidInputError("limit", "too big"), "Invalid `limit`: too big"),
        (errors.ConfirmationRequiredError("clear"), "needs confirm=true"),
        (errors.ConflictError("key taken"), "Conflict: key taken"),
        (errors.EmbeddingUnavailableError("no model"), "mode='keyword'"),
        (errors.SchemaMismatchError("too new"), "cannot be used: too new"),
        (errors.StorageError("add"), "nothing was changed"),
    ],
)
def test_mapped_messages_say_what_to_do(exc: errors.MemoryCoreError, expected: str) -> None:
    with pytest.raises(ToolError, match=expected), domain_errors_as_tool_errors("t"):
        raise exc


def test_tool_errors_pass_through_untouched() -> None:
    with pytest.raises(ToolError, match=r"^as is$"), domain_errors_as_tool_errors("t"):
        raise ToolError("as is")


async def test_the_tool_decorator_maps_errors_under_the_tool_name_and_binds_the_request() -> None:
    import structlog
    from mcp import Client
    from mcp.server.mcpserver import Context
    from mcp.types import ToolAnnotations

    from server.protocol.surface import MemstrataServer
    from server.tools import tool
    from server.toolsets import Toolset

    mcp = MemstrataServer("t", toolsets=[Toolset.CORE])
    read = ToolAnnotations(read_only_hint=True)

    @tool(mcp, toolset=Toolset.CORE, title="Refuses", annotations=read)
    async def refuses_confirmation(ctx: Context) -> str:
        """Always asks for confirmation."""
        raise errors.ConfirmationRequiredError("forget")

    @tool(mcp, toolset=Toolset.CORE, title="Breaks", annotations=read)
    async def breaks_inside(ctx: Context) -> str:
        """Always fails unexpectedly."""
        raise RuntimeError("SELECT secret FROM /var/db")

    @tool(mcp, toolset=Toolset.CORE, title="Logs", annotations=read)
    async def shows_log_context(ctx: Context) -> str:
        """What a log line of this tool would carry."""
        bound = structlog.contextvars.get_contextvars()
        return f"{bound['tool']} {bound['request_id'] == ctx.request_id}"

    async with Client(mcp) as client:
        refused = await client.call_tool("refuses_confirmation", {})
        broken = await client.call_tool("breaks_inside", {})
        logged = await client.call_tool("shows_log_context", {})
    assert refused.is_error and "needs confirm=true" in refused.content[0].text  # type: ignore[union-attr]
    text = broken.content[0].text  # type: ignore[union-attr]
    assert broken.is_error and "SELECT" not in text and "/var/db" not in text
    assert text.endswith("Internal error in `breaks_inside`; details are in the server log.")
    assert logged.content[0].text == "shows_log_context True"  # type: ignore[union-attr]
