"""enable_toolset: turn on a group of tools at run time when the conversation needs it."""

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.settings import Settings
from server.tools import tool
from server.toolsets import TOOLSET_PURPOSE, Toolset

__all__ = ["EnableToolsetOut", "register"]

ToolsetName = Literal[
    "maintenance", "bulk", "conversations", "scratchpad", "preferences", "documents", "all"
]


class EnableToolsetOut(BaseModel):
    """Result of `enable_toolset`."""

    enabled: list[str] = Field(description="Toolsets enabled now.")
    new_tools: list[str] = Field(description="Tools that became available with this call.")

    def as_text(self) -> str:
        """One line: what can be called now."""
        if not self.new_tools:
            return f"Already enabled: {', '.join(self.enabled)}."
        return f"Enabled; you can now call: {', '.join(self.new_tools)}."


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register enable_toolset (stdio only: over HTTP one server serves many clients)."""
    del settings
    groups = "; ".join(f"{t}: {TOOLSET_PURPOSE[t]}" for t in Toolset if t is not Toolset.CORE)

    @tool(
        mcp,
        toolset=Toolset.CORE,
        title="Enable a toolset",
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def enable_toolset(
        toolset: Annotated[ToolsetName, Field(description=groups)],
        ctx: Context[AppContext],
    ) -> EnableToolsetOut:
        """Make more memory tools available when the person asks for something these can't do.

        Details:
        The server lists only the toolsets in MEMSTRATA_TOOLSETS (by default core and
        maintenance). This tool adds one for the rest of the session and sends
        `notifications/tools/list_changed`, so clients that honour it list the new tools at
        once; other clients see them after reconnecting, or set MEMSTRATA_TOOLSETS.
        """
        chosen = list(Toolset) if toolset == "all" else [Toolset(toolset)]
        new_tools = mcp.enable(chosen)
        if new_tools:
            # Clients before protocol 2026-07-28 hear it as a notification on the session;
            # newer ones on their `subscriptions/listen` stream. Each path ignores the other.
            await ctx.session.send_tool_list_changed()
            await ctx.notify_tools_changed()
        return EnableToolsetOut(
            enabled=sorted(t.value for t in mcp.enabled_toolsets), new_tools=new_tools
        )
