"""What the sub-agent hooks do: a sub-agent starts with memory, and what it found is kept.

SubagentStart: Claude Code says which agent starts, not its task, so the task is read from the
session's transcript: the input of the last Task (or Agent) tool call, the call that spawned
it. The memories and rules that match that task strongly are given to the sub-agent, fenced as
data like every injection (`additionalContext`), within the prompt hook's budget. The parent
session's own words are included: the sub-agent has none of them.

SubagentStop: the sub-agent's last answer (its result) becomes an episodic memory of the
project, authored by the agent type, with the task it answers in metadata (`reply_to`), cut
into parts like a long answer and redacted like every write; an identical result is the same
memory. Claude Code's own sub-agents (the compaction, whose agent type is empty) are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog

from memory_core.domain.boilerplate import said_text
from memory_core.domain.fence import fence_intro, fenced
from memory_core.domain.hook_session import SUBAGENT_RESULT_KIND
from memory_core.domain.models import Layer
from server.hooks.payload import HookPayload
from server.hooks.services import HookServices
from server.hooks.transcript_file import read_head, read_tail

__all__ = ["SUBAGENT_RESULT_KIND", "subagent_start", "subagent_stop", "task_of"]

log = structlog.get_logger(__name__)

_TAIL_BYTES = 1_000_000  # where the spawning Task call is: the end of the transcript
_HEAD_BYTES = 256_000  # where a sub-agent's task is: the start of its own transcript
_SPAWNING_TOOLS = ("Task", "Agent")
_TASK_CHARS = 300


def _spawning_input(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    message = record.get("message") if isinstance(record, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_use"
            and block.get("name") in _SPAWNING_TOOLS
            and isinstance(spawned := block.get("input"), dict)
        ):
            return spawned
    return None


async def task_of(transcript: Path) -> str | None:
    """The task of the sub-agent being spawned: the last Task call's description and prompt."""
    for line in reversed(await read_tail(transcript, "transcript_path", _TAIL_BYTES)):
        if '"tool_use"' not in line:
            continue
        data = _spawning_input(line)
        if data is not None:
            parts = [data.get("description"), data.get("prompt")]
            text = " ".join(p for p in parts if isinstance(p, str)).strip()
            return text or None
    return None


async def _first_prompt(transcript: Path) -> str | None:
    """A sub-agent's task as its own transcript opens with it."""
    for line in await read_head(transcript, "agent_transcript_path", _HEAD_BYTES):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") != "user":
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if isinstance(content, str) and (text := said_text(content)):
            return text
    return None


async def subagent_start(svc: HookServices, payload: HookPayload) -> str | None:
    """The memories and rules that match the starting sub-agent's task (see the module)."""
    from server.hooks.events import recall_lines

    policy = svc.settings.hooks
    if not policy.subagents or not payload.agent_type or payload.transcript_path is None:
        return None
    task = await task_of(payload.transcript_path)
    if task is None:
        return None
    project = svc.settings.default_project(payload.cwd)
    lines = await recall_lines(svc, project, task)
    if not lines:
        return None
    return fenced(fence_intro(project, "Memories for this sub-agent's task"), lines)


async def subagent_stop(svc: HookServices, payload: HookPayload) -> None:
    """Keep the sub-agent's result as an episodic memory (see the module)."""
    from memory_core.domain.turns import said_parts
    from memory_core.services.memories import AppendItem

    policy = svc.settings.hooks
    result = said_text(payload.last_assistant_message or "")
    if not policy.subagents or not payload.agent_type or payload.stop_hook_active or not result:
        return
    agent_path = payload.agent_transcript_path
    task = await _first_prompt(agent_path) if agent_path is not None else None
    project = svc.settings.default_project(payload.cwd)
    items = [
        AppendItem(
            layer=Layer.EPISODIC,
            content=part.text,
            metadata={
                "kind": SUBAGENT_RESULT_KIND,
                "agent_type": payload.agent_type,
                "source": "claude-code",
            }
            | ({"reply_to": part.reply_to} if part.reply_to else {})
            | ({"part": f"{part.part}/{part.parts}"} if part.parts > 1 else {}),
            session_id=payload.session_id,
            author=payload.agent_type,
        )
        for part in said_parts(payload.agent_type, result, None, task)
    ]
    done = await svc.memories.append_many(project, items)
    log.info(
        "hooks.subagent_kept",
        agent_type=payload.agent_type,
        created=sum(1 for r in done if r.status == "created"),
    )
