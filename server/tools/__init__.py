"""MCP tools: each module exposes register(mcp, settings), and each tool only translates.

The `tool` decorator adds what every tool shares:
- its toolset (server.toolsets), so the server lists only the enabled ones;
- its description: the docstring up to a line `Details:`, dedented; what follows that line is
  for docs/tools.md only, so the model does not pay for it on every turn;
- its answer: the result model goes out whole as `structuredContent` (for programs) and, as
  the text a model reads, the model's own compact `as_text()` rendering (or compact JSON
  without empty fields), never indented JSON.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, TypeVar, runtime_checkable

from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from server.surface import MemstrataServer
from server.toolsets import Toolset

__all__ = ["DETAILS_MARKER", "Project", "TextRendered", "compact_json", "render_text", "tool"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

DETAILS_MARKER = "Details:"

# The `project` argument of every project-scoped memory tool.
Project = Annotated[str | None, Field(description="Memory scope; omit for the default project.")]


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


def render_text(model: BaseModel) -> str:
    """The text content of a tool answer."""
    return model.as_text() if isinstance(model, TextRendered) else compact_json(model)


def split_doc(doc: str | None) -> tuple[str, str]:
    """(model-facing description, docs-only details) of a tool docstring."""
    text = inspect.cleandoc(doc or "")
    head, marker, tail = text.partition(f"\n{DETAILS_MARKER}\n")
    return head.strip(), tail.strip() if marker else ""


def _answering_in_text(fn: F) -> F:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        result = await fn(*args, **kwargs)
        if not isinstance(result, BaseModel):
            return result
        return CallToolResult(
            content=[TextContent(type="text", text=render_text(result))],
            structured_content=result.model_dump(mode="json", by_alias=True),
        )

    return call  # type: ignore[return-value]  # same signature, via functools.wraps


def tool(
    mcp: MemstrataServer, *, toolset: Toolset, title: str, annotations: ToolAnnotations
) -> Callable[[F], F]:
    """Register a function as a tool of `toolset` (see the module docstring)."""

    def register(fn: F) -> F:
        description, details = split_doc(fn.__doc__)
        mcp.add_tool(
            _answering_in_text(fn), title=title, description=description, annotations=annotations
        )
        mcp.assign(fn.__name__, toolset, details)
        return fn

    return register
