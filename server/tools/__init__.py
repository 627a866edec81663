"""MCP tools: each module exposes register(mcp, settings), and each tool only translates."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

__all__ = ["tool"]

F = TypeVar("F", bound=Callable[..., Any])


def tool(mcp: MCPServer[Any], *, title: str, annotations: ToolAnnotations) -> Callable[[F], F]:
    """Register a function as a tool, its docstring (dedented) being the model-facing text.

    `MCPServer.tool()` sends the raw docstring, indentation included; models read every byte.
    """

    def register(fn: F) -> F:
        mcp.add_tool(
            fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations
        )
        return fn

    return register
