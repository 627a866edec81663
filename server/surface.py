"""The tool surface a client sees: which toolsets are listed, and schemas without padding.

`MemstrataServer` is the SDK's `MCPServer` plus two rules:
- only tools of enabled toolsets are listed or callable (`MEMSTRATA_TOOLSETS`, and
  `enable_toolset` at run time over stdio, announced with `notifications/tools/list_changed`);
- published input schemas drop what pydantic adds for programs but a model pays for on every
  turn: per-field `title`s, `anyOf [X, null]` wrappers and `default: null` (the argument
  models still accept null; a field absent from `required` is already optional).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mcp.server import MCPServer
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, InputRequiredResult, Tool

from server.app_context import AppContext
from server.toolsets import Toolset

__all__ = ["MemstrataServer", "compact_schema", "model_visible_definition"]

Schema = dict[str, Any]


class MemstrataServer(MCPServer[AppContext]):
    """An MCPServer whose tools belong to toolsets, of which only the enabled ones are listed."""

    def __init__(self, *args: Any, toolsets: Iterable[Toolset], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.enabled_toolsets: set[Toolset] = set(toolsets)
        self.toolset_of: dict[str, Toolset] = {}
        self.tool_details: dict[str, str] = {}  # docs-only text (docs/tools.md), never sent
        self._schemas: dict[str, Schema] = {}

    def assign(self, name: str, toolset: Toolset, details: str) -> None:
        """Record the toolset (and the docs-only details) of a registered tool."""
        self.toolset_of[name] = toolset
        if details:
            self.tool_details[name] = details

    def is_enabled(self, name: str) -> bool:
        """Whether a tool is listed and callable (tools outside every toolset always are)."""
        toolset = self.toolset_of.get(name)
        return toolset is None or toolset in self.enabled_toolsets

    def enable(self, toolsets: Iterable[Toolset]) -> list[str]:
        """Enable toolsets; returns the names of the tools that became available."""
        new = set(toolsets) - self.enabled_toolsets
        self.enabled_toolsets |= new
        return sorted(name for name, ts in self.toolset_of.items() if ts in new)

    def tools_in(self, toolset: Toolset) -> list[str]:
        """The names of a toolset's tools, in registration order."""
        return [name for name, ts in self.toolset_of.items() if ts is toolset]

    async def list_tools(self) -> list[Tool]:
        """The enabled tools, with compact input schemas."""
        listed: list[Tool] = []
        for info in await super().list_tools():
            if not self.is_enabled(info.name):
                continue
            # Output schemas stay as they are: clients validate results against them, and a
            # null in a result needs the `anyOf [X, null]` this removes from inputs.
            schema = self._schemas.get(info.name)
            if schema is None:
                schema = self._schemas[info.name] = compact_schema(info.input_schema)
            listed.append(info.model_copy(update={"input_schema": schema}))
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool of an enabled toolset; any other is refused with how to enable it."""
        if not self.is_enabled(name):
            toolset = self.toolset_of[name]
            raise ToolError(
                f"Tool `{name}` is in the `{toolset}` toolset, which is not enabled. Call "
                f'`enable_toolset` with toolset="{toolset}" if it is listed, or ask the person to '
                f"add {toolset} to MEMSTRATA_TOOLSETS."
            )
        return await super().call_tool(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """Serve stdio, announcing `tools.listChanged` (enable_toolset changes the list).

        The SDK's own run_stdio_async passes no NotificationOptions, so the capability would
        say the list never changes; its TODO(L53) notes the capabilities API will change.
        """
        low = self._lowlevel_server
        options = low.create_initialization_options(NotificationOptions(tools_changed=True))
        async with stdio_server() as (read_stream, write_stream):
            await low.run(read_stream, write_stream, options)


def compact_schema(schema: Schema) -> Schema:
    """A JSON schema without the padding pydantic adds (see the module docstring)."""
    defs = schema.get("$defs", {})
    empty_refs = {f"#/$defs/{name}" for name, body in defs.items() if body == {}}
    out = _compact(schema, empty_refs)
    kept_defs = {k: v for k, v in out.pop("$defs", {}).items() if f"#/$defs/{k}" not in empty_refs}
    if kept_defs:
        out["$defs"] = kept_defs
    out.pop("title", None)
    return out


def _compact(node: Schema, empty_refs: set[str]) -> Schema:
    out: Schema = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if (key == "properties" and isinstance(value, dict)) or (
            key == "$defs" and isinstance(value, dict)
        ):
            out[key] = {name: _compact(sub, empty_refs) for name, sub in value.items()}
        elif key == "additionalProperties" and isinstance(value, dict):
            if value.get("$ref") not in empty_refs:  # {} (any JSON) is the default anyway
                out[key] = _compact(value, empty_refs)
        elif key == "items" and isinstance(value, dict):
            out[key] = _compact(value, empty_refs)
        elif key == "anyOf" and isinstance(value, list):
            branches = [_compact(b, empty_refs) for b in value if b != {"type": "null"}]
            if len(branches) == 1:
                out.update(branches[0])  # X | None published as X; absent means None
            else:
                out[key] = branches
        else:
            out[key] = value
    return out


def model_visible_definition(tool: Tool) -> str:
    """What a client puts in the model's context for a tool: name, description, input schema.

    As compact JSON, the form `memstrata tools`, docs/tools.md and the size test count.
    """
    body = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
