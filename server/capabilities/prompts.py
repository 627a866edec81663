"""MCP prompts: reusable starts for working with the memory."""

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from server.app_context import AppContext
from server.settings import Settings

__all__ = ["register"]

# Clients show these next to the argument fields (prompts/list `arguments[].description`).
Task = Annotated[str, Field(description="The task you are about to start, in a sentence.")]
ProjectArg = Annotated[
    str, Field(description="Memory project to use; empty for the server's default project.")
]


def register(mcp: MCPServer[AppContext], settings: Settings) -> None:
    """Register the prompts, defaulting to the configured project."""
    default = settings.default_project()

    @mcp.prompt(name="memory_briefing", title="Brief me from memory")
    async def memory_briefing(ctx: Context[AppContext], project: ProjectArg = "") -> str:
        """What memstrata remembers of a project: its rules, recent memories, last session.

        The text Claude Code's SessionStart hook injects, for clients without hooks (Claude
        Desktop): pick it at the start of a conversation.
        """
        app = ctx.request_context.lifespan_context.container
        scope = project or default
        hooks = app.settings.hooks
        start = await app.start.build(scope, user=hooks.user_id, token_budget=hooks.start_tokens)
        return start.text or f"memstrata holds no memories in project {scope!r} yet."

    @mcp.prompt(name="start_task_with_memory", title="Start a task with memory")
    def start_task_with_memory(task: Task, project: ProjectArg = "") -> str:
        """Pick up relevant memories before starting a task."""
        scope = project or default
        return (
            f"Before you start, use the memstrata memory (project {scope!r}):\n"
            f"1. Call `load_context` with project={scope!r} to see what was used recently.\n"
            f"2. Call `search` with project={scope!r} and a query describing the task, and "
            "`recall` for any fact you expect to have been learned (by its key).\n"
            "3. Follow the procedural rules `recall` returns, and say which memories you used.\n"
            f"\nThe task: {task}"
        )

    @mcp.prompt(name="record_what_we_learned", title="Record what we learned")
    def record_what_we_learned(project: ProjectArg = "") -> str:
        """Store what this conversation taught, before it ends."""
        scope = project or default
        return (
            f"Record what we learned in this conversation in memstrata (project {scope!r}):\n"
            "- durable facts with `learn` (a short dotted key, e.g. user.preferred_language);\n"
            '- "when X, do Y" rules with `append` layer="procedural" (key = the condition);\n'
            '- notable events and decisions with `append` layer="episodic".\n'
            "Search first, so you update what is already stored instead of duplicating it, and "
            "use `forget` for anything that turned out to be wrong."
        )
