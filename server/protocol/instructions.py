"""The server's `instructions`, written for the client at hand.

Trigger: a client puts the instructions in the model's context; Claude Code sends them with
every model request (under "# MCP Server Instructions"), so every word is paid on every turn.
Why: with memstrata's Claude Code hooks the project's briefing is already in context at session
start and relevant memories come with each prompt, so telling the model to call `load_context`
first only repeats the briefing; and naming a tool the client does not list (a toolset that is
not enabled) sends the model after something it cannot call. Outcome: two short texts naming
only listed tools:
- `claude-code-hooks` (MEMSTRATA_CLIENT, set by the plugin and `memstrata setup claude-code`
  in the server's environment): what is already there, when to search, what to store, and
  that the Stop hook may ask for it;
- `generic`: start with `load_context`, search before answering from memory, store what lasts.
Each mentions `enable_toolset` when it is listed and some toolset is not enabled.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Literal

from server.toolsets import Toolset

__all__ = ["Client", "instructions_for"]

Client = Literal["generic", "claude-code-hooks"]

_STORE = (
    "- Store what later sessions need, once settled: `learn` a fact (key -> value); `append` "
    'layer "procedural" for a "when X, do Y" rule (key = X), "episodic" for a decision and '
    "why, or a fix. Not what the code or git history says."
)

_WITH_HOOKS = (
    "memstrata is your memory across sessions of this project; its briefing and the memories "
    "relevant to each prompt are already in your context.\n"
    "- `search` for more (past decisions, earlier problems, how things are done here); "
    "`recall` reads a fact by its key.\n"
    f"{_STORE}\n"
    "- A hook may ask at the end of a turn to store what you learned: do so, or stop."
)

_GENERIC = (
    "memstrata is your memory across conversations.\n"
    "- Start a task with `load_context` (the project's rules, recent memories, last session).\n"
    "- Before answering from memory, `search` (meaning and words); `recall` reads a fact by "
    "its key.\n"
    f"{_STORE}"
)


def instructions_for(
    client: Client, enabled: Set[Toolset], *, runtime_toolsets: bool
) -> str | None:
    """The instructions for `client` when the `enabled` toolsets are listed.

    `runtime_toolsets`: `enable_toolset` is registered (stdio). Without the core toolset no
    memory tool is listed, and there is nothing to instruct.
    """
    if Toolset.CORE not in enabled:
        return None
    text = _WITH_HOOKS if client == "claude-code-hooks" else _GENERIC
    more = sorted(t.value for t in Toolset if t not in enabled)
    if runtime_toolsets and more:
        text += f"\n- `enable_toolset` adds more tools ({', '.join(more)})."
    return text
