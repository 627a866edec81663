"""MCP tools: each module exposes register(mcp, settings), and each tool only translates.

The `tool` decorator adds what every tool shares:
- its toolset (server.toolsets), so the server lists only the enabled ones (and builds a
  tool's schemas only once its toolset is enabled);
- its description: the docstring up to a line `Details:`, dedented; what follows that line is
  for docs/tools.md only, so the model does not pay for it on every turn;
- its answer: as the text a model reads, the result model's own compact `as_text()`
  rendering (or compact JSON without empty fields), never indented JSON; and as
  `structuredContent`, the model (a `Sparse` one without the fields left at their defaults,
  which the output schema gives). Some clients hand the model the structured content instead
  of the text, so result models hold what a model needs (ranking signals and whole records
  only on request), and a client known to do so gets the text alone (server.protocol.surface);
- its errors: the body runs with `tool=<its name>` and `request_id` bound to the log context,
  and domain errors become ToolErrors (server.protocol.errors), so no tool retypes its own name.

A tool body gets the container with `container(ctx)`.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, TypeVar, runtime_checkable

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from server.app_context import AppContext
from server.container import Container
from server.protocol.errors import domain_errors_as_tool_errors
from server.protocol.surface import MemstrataServer
from server.schemas.sparse import Sparse
from server.toolsets import Toolset

__all__ = [
    "DETAILS_MARKER",
    "Project",
    "TextRendered",
    "compact_json",
    "container",
    "render_text",
    "structured",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

DETAILS_MARKER = "Details:"

# The `project` argument of every project-scoped memory tool.
Project = Annotated[str | None, Field(description="Memory scope; omit for the default project.")]


def container(ctx: Context[AppContext]) -> Container:
    """The services of the running server, as the lifespan built them."""
    return ctx.request_context.lifespan_context.container


@runtime_checkable
class TextRendered(Protocol):
    """A result model that knows its compact text form."""

    def as_text(self) -> str:
        """The answer as a model should read it."""
        ...


def _prune(value: Any) -> Any:
    """Drop None, empty strings, lists and objects (recursively); keep 0 and false."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def compact_json(model: BaseModel) -> str:
    """One line of JSON without empty fields or indentation."""
    data = _prune(model.model_dump(mode="json", by_alias=True))
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def structured(model: BaseModel) -> dict[str, Any]:
    """The structured content of a tool answer (a Sparse one without its default fields)."""
    sparse = isinstance(model, Sparse)
    return model.model_dump(mode="json", by_alias=True, exclude_defaults=sparse)


def render_text(model: BaseModel) -> str:
    """The text content of a tool answer."""
    return model.as_text() if isinstance(model, TextRendered) else compact_json(model)


def split_doc(doc: str | None) -> tuple[str, str]:
    """(model-facing description, docs-only details) of a tool docstring."""
    text = inspect.cleandoc(doc or "")
    head, marker, tail = text.partition(f"\n{DETAILS_MARKER}\n")
    return head.strip(), tail.strip() if marker else ""


def _request_id(kwargs: dict[str, Any]) -> str | None:
    """The id of the request a tool runs for (the SDK passes the Context as a keyword)."""
    ctx = next((v for v in kwargs.values() if isinstance(v, Context)), None)
    return None if ctx is None else ctx.request_id


def _answering_in_text(fn: F) -> F:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        with domain_errors_as_tool_errors(fn.__name__, _request_id(kwargs)):
            result = await fn(*args, **kwargs)
        if not isinstance(result, BaseModel):
            return result
        return CallToolResult(
            content=[TextContent(type="text", text=render_text(result))],
            structured_content=structured(result),
        )

    return call  # type: ignore[return-value]  # same signature, via functools.wraps


def tool(
    mcp: MemstrataServer, *, toolset: Toolset, title: str, annotations: ToolAnnotations
) -> Callable[[F], F]:
    """Register a function as a tool of `toolset` (see the module docstring)."""

    def register(fn: F) -> F:
        description, details = split_doc(fn.__doc__)

        def build() -> None:
            # The costly part (argument model, input and output schemas), so it runs only
            # once the toolset is enabled (server.protocol.surface).
            mcp.add_tool(
                _answering_in_text(fn),
                title=title,
                description=description,
                annotations=annotations,
            )

        mcp.add_toolset_tool(fn.__name__, toolset, details, build)
        return fn

    return register
