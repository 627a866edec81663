"""The tool surface a client sees: which toolsets are listed, and schemas without padding.

`MemstrataServer` is the SDK's `MCPServer` plus two rules:
- only tools of enabled toolsets are listed or callable (`MEMSTRATA_TOOLSETS`, and
  `enable_toolset` at run time over stdio, announced with `notifications/tools/list_changed`);
- published input schemas drop what pydantic adds for programs but a model pays for on every
  turn: per-field `title`s, `anyOf [X, null]` wrappers and `default: null` (the argument
  models still accept null; a field absent from `required` is already optional);
- arguments a tool does not take are refused, and schema errors read like the server's own
  ("Invalid `limit`: must be at most 100 (got 1000)"), not like pydantic's dump;
- a client known to hand the model a result's `structuredContent` in place of its text
  (Claude Code, by its `initialize` clientInfo name) gets the text answer alone: tools listed
  without `outputSchema` (a listed one obliges structured content) and results without
  `structuredContent`, so the model reads the text written for it (issue 31).

What a client sees does not depend on when a tool is built, so start-up builds only what the
first `tools/list` shows (issue 21): a tool of a toolset that is not enabled is registered by
name and built (its argument model and schemas, the SDK's `add_tool`) when the toolset is
enabled, and a module whose toolsets are all disabled is not even imported until one of its
tools is asked about. Listing follows registration order whenever a tool was built.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    Resource,
    Tool,
)
from pydantic import ValidationError

from server.app_context import AppContext
from server.protocol.argument_errors import describe_validation_error, unknown_arguments_message
from server.protocol.stdio_errors import serve_stdio_answering
from server.toolsets import Toolset

__all__ = [
    "TEXT_ONLY_CLIENTS",
    "MemstrataServer",
    "compact_schema",
    "model_visible_definition",
    "reads_text_only",
]

Schema = dict[str, Any]

# How long after building the first `tools/list` answer the work waiting for it may start:
# the SDK serialises and writes the answer (two thread hops over stdio) in the meantime.
LISTING_GRACE_S = 0.05

_NO_SLOT = 1 << 30  # tools registered outside `defer_module` list after the others

# clientInfo names of clients that put a tool result's structuredContent (as JSON) in the
# model's context instead of its text content: Claude Code 2.1.332 does (measured against a
# stub model, issue 31), so a 5-hit search cost the model 3x the text written for it.
TEXT_ONLY_CLIENTS = frozenset({"claude-code"})


def reads_text_only(session: ServerSession | None) -> bool:
    """Whether the session's client is one of TEXT_ONLY_CLIENTS (by its initialize clientInfo)."""
    params = session.client_params if session is not None else None
    return params is not None and params.client_info.name in TEXT_ONLY_CLIENTS


class MemstrataServer(MCPServer[AppContext]):
    """An MCPServer whose tools belong to toolsets, of which only the enabled ones are listed."""

    def __init__(self, *args: Any, toolsets: Iterable[Toolset], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.enabled_toolsets: set[Toolset] = set(toolsets)
        self._toolset_of: dict[str, Toolset] = {}
        self._tool_details: dict[str, str] = {}  # docs-only text (docs/tools.md), never sent
        self._schemas: dict[str, Schema] = {}
        # Tools registered by name but not built yet (their toolset is not enabled).
        self._unbuilt: dict[str, Callable[[], None]] = {}
        # Registrations of tool modules not imported yet: (slot, toolsets served, register).
        self._unloaded: list[tuple[int, frozenset[Toolset], Callable[[], None]]] = []
        # Each tool's place in the listing: (its module's slot, its place in the module), so
        # a module registered late still lists where an eager start would have put it.
        self._rank: dict[str, tuple[int, int]] = {}
        self._slots = 0
        self._slot = _NO_SLOT
        # Set when the first `tools/list` has been answered (see `first_listing`).
        self._listed: asyncio.Event | None = None
        self._listing_seen = False
        # Concrete URIs served by templates, listed so clients can offer them (@-mentions).
        self.listed_resources: list[Resource] = []

    @property
    def toolset_of(self) -> dict[str, Toolset]:
        """Every tool's toolset, in registration order (loads deferred tool modules)."""
        self._load_modules(None)
        return dict(sorted(self._toolset_of.items(), key=lambda item: self._rank[item[0]]))

    @property
    def tool_details(self) -> dict[str, str]:
        """Docs-only details of every tool that has them (loads deferred tool modules)."""
        self._load_modules(None)
        return self._tool_details

    def defer_module(self, toolsets: Iterable[Toolset], register: Callable[[], None]) -> None:
        """Register a tool module's tools now if one of `toolsets` is enabled, else on demand.

        `register` imports the module and registers its tools; it runs when a toolset it
        serves is enabled or any tool name is looked up (an unknown call, `toolset_of`).
        """
        slot, self._slots = self._slots, self._slots + 1
        served = frozenset(toolsets)
        if served & self.enabled_toolsets:
            self._register(slot, register)
        else:
            self._unloaded.append((slot, served, register))

    def _register(self, slot: int, register: Callable[[], None]) -> None:
        outer, self._slot = self._slot, slot
        try:
            register()
        finally:
            self._slot = outer

    def _load_modules(self, toolsets: set[Toolset] | None) -> None:
        """Run the deferred registrations serving `toolsets` (None: all of them)."""
        due = [r for r in self._unloaded if toolsets is None or r[1] & toolsets]
        self._unloaded = [r for r in self._unloaded if r not in due]
        for slot, _, register in due:
            self._register(slot, register)

    def add_toolset_tool(
        self, name: str, toolset: Toolset, details: str, build: Callable[[], None]
    ) -> None:
        """Register a tool of `toolset`; `build` adds it to the SDK (now, or once enabled)."""
        self._toolset_of[name] = toolset
        self._rank[name] = (self._slot, len(self._rank))
        if details:
            self._tool_details[name] = details
        if toolset in self.enabled_toolsets:
            build()
        else:
            self._unbuilt[name] = build

    def is_enabled(self, name: str) -> bool:
        """Whether a tool is listed and callable (tools outside every toolset always are)."""
        toolset = self._toolset_of.get(name)
        return toolset is None or toolset in self.enabled_toolsets

    def enable(self, toolsets: Iterable[Toolset]) -> list[str]:
        """Enable toolsets; returns the names of the tools that became available."""
        new = set(toolsets) - self.enabled_toolsets
        self.enabled_toolsets |= new
        self._load_modules(new)
        for name in sorted(self._unbuilt, key=self._rank.__getitem__):
            if self._toolset_of[name] in new:
                self._unbuilt.pop(name)()
        return sorted(name for name, ts in self._toolset_of.items() if ts in new)

    def tools_in(self, toolset: Toolset) -> list[str]:
        """The names of a toolset's tools, in registration order."""
        return [name for name, ts in self.toolset_of.items() if ts is toolset]

    async def first_listing(self) -> None:
        """Return once the first `tools/list` of this server has been answered.

        Start-up work that no answer before it needs (the model preload, the scheduler) waits
        for this, so it does not compete with the client's handshake for the interpreter.
        """
        if self._listed is None:
            self._listed = asyncio.Event()
        await self._listed.wait()

    async def list_resources(self) -> list[Resource]:
        """Static resources, then the template-served ones recorded in `listed_resources`."""
        return [*await super().list_resources(), *self.listed_resources]

    async def list_tools(self) -> list[Tool]:
        """The enabled tools, with compact input schemas, in registration order."""
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
        # Tools built when their toolset was enabled sit last in the SDK's table.
        listed.sort(key=lambda t: self._rank.get(t.name, (_NO_SLOT, 0)))
        self._announce_listing()
        return listed

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[AppContext], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """`tools/list`, without output schemas for a client that reads text only."""
        listed = await super()._handle_list_tools(ctx, params)
        if reads_text_only(ctx.session):
            tools = [t.model_copy(update={"output_schema": None}) for t in listed.tools]
            listed = listed.model_copy(update={"tools": tools})
        return listed

    def _announce_listing(self) -> None:
        """Wake `first_listing` once the answer being built has gone out."""
        if self._listing_seen:
            return
        self._listing_seen = True
        if self._listed is None:
            self._listed = asyncio.Event()
        # Soon, not now: the SDK still has to serialise and write this answer.
        asyncio.get_running_loop().call_later(LISTING_GRACE_S, self._listed.set)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool of an enabled toolset; any other is refused with how to enable it.

        Arguments the tool does not take are refused (a misspelt `limt` would otherwise be
        dropped silently), and schema errors are told as "Invalid `field`: what is allowed".
        """
        if name not in self._toolset_of:
            self._load_modules(None)  # a tool of a module not imported yet?
        if not self.is_enabled(name):
            toolset = self._toolset_of[name]
            raise ToolError(
                f"Tool `{name}` is in the `{toolset}` toolset, which is not enabled. Call "
                f'`enable_toolset` with toolset="{toolset}" if it is listed, or ask the person to '
                f"add {toolset} to MEMSTRATA_TOOLSETS."
            )
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            valid = list(tool.parameters.get("properties", {}))
            unknown = set(arguments) - set(valid)
            if unknown:
                raise ToolError(unknown_arguments_message(name, unknown, valid))
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK's text for a schema mismatch is pydantic's dump; say it as the domain
            # errors do. Chained to the ValidationError so the SDK still logs field names only.
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(
                    f"Error executing tool {name}: {describe_validation_error(cause)}"
                ) from cause
            raise
        if isinstance(result, CallToolResult) and _text_only_caller(context):
            result = result.model_copy(update={"structured_content": None})
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[AppContext, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """Render a prompt; a bad name or arguments is the caller's error (-32602), said plainly.

        The SDK raises ValueError for these, which reaches the client as an internal error.
        """
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            known = ", ".join(p.name for p in self._prompt_manager.list_prompts())
            raise MCPError(INVALID_PARAMS, f"No prompt `{name}`. Prompts: {known}.")
        given = set(arguments or {})
        takes = [a.name for a in prompt.arguments or []]
        missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in given]
        unknown = sorted(given - set(takes))
        if missing or unknown:
            problems = [f"missing `{m}` (required)" for m in missing]
            problems += [f"unknown argument `{u}`" for u in unknown]
            raise MCPError(
                INVALID_PARAMS,
                f"Prompt `{name}`: {'; '.join(problems)}. It takes: {', '.join(takes) or 'none'}.",
            )
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, f"Prompt `{name}`: {exc}") from exc

    async def run_stdio_async(self) -> None:
        """Serve stdio, announcing `tools.listChanged`, answering malformed lines.

        `enable_toolset` changes the tool list; server.protocol.stdio_errors answers each line the
        SDK's transport would drop. The SDK's own run_stdio_async passes no
        NotificationOptions, so the capability would say the list never changes; its TODO(L53)
        notes the capabilities API will change.
        """
        low = self._lowlevel_server
        options = low.create_initialization_options(NotificationOptions(tools_changed=True))
        # Lines the SDK's transport cannot read get a JSON-RPC error instead of silence.
        await serve_stdio_answering(low, options)


def _text_only_caller(context: Context[AppContext, Any] | None) -> bool:
    """Whether a tool call comes from a client that reads text only (see reads_text_only)."""
    if context is None:
        return False
    try:
        session = context.session
    except ValueError:  # called outside a request (tests calling call_tool directly)
        return False
    return reads_text_only(session)


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
