"""PreToolUse, SubagentStart and SubagentStop through the `memstrata hook` commands, with
Claude Code's real payloads: rules reach the model at the tool call they are about, once per
rule per session; a sub-agent starts with the memories of its task; its result is kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memory_core.domain.models import Layer
from server.container import open_container
from tests.e2e.test_hooks import S1, S2, Run, Workspace, hook, ws  # noqa: F401 (fixture)

pytestmark = pytest.mark.e2e

RULES = {
    "committing": "run make lint and make test first",
    "before editing migrations": "ask Dana; migrations are applied by hand in production",
    "deploying to production": "use make deploy ENV=prod, never a manual push",
}


async def _seed(ws: Workspace) -> dict[str, int]:  # noqa: F811
    async with open_container(ws.settings()) as c:
        ids = {}
        for condition, action in RULES.items():
            done = await c.memories.append(ws.project, Layer.PROCEDURAL, action, key=condition)
            ids[condition] = done.memory.id
        await c.memories.append(
            ws.project, Layer.EPISODIC, "The payment webhooks verify Stripe signatures in handle()."
        )
        return ids


def _tool(ws: Workspace, tool: str, tool_input: dict[str, Any], session: str = S1) -> str:  # noqa: F811
    payload = ws.payload(
        "PreToolUse", session, tool_name=tool, tool_input=tool_input, tool_use_id="toolu_01"
    )
    run = hook(ws, "pre-tool-use", payload)
    assert run.code == 0 and run.stderr == "", run.stderr
    return run.context("PreToolUse") if run.stdout else ""


def test_a_rule_reaches_the_model_at_the_tool_call_it_is_about(ws: Workspace) -> None:  # noqa: F811
    ids = asyncio.run(_seed(ws))
    commit = {"command": 'git commit -m "Fix the webhook"', "description": "Commit the fix"}
    text = _tool(ws, "Bash", commit)
    assert text.startswith("<memstrata-memory>") and "Rules that apply to this Bash call" in text
    assert f"#{ids['committing']} [procedural] when committing: run make lint" in text
    assert "Dana" not in text and "deploy" not in text
    # Once per rule per session: the next commit says nothing; another session is told again.
    assert _tool(ws, "Bash", commit) == ""
    assert "make lint" in _tool(ws, "Bash", commit, session=S2)
    edit = {
        "file_path": "/repo/migrations/0012_add_index.sql",
        "old_string": "a",
        "new_string": "b",
    }
    assert "before editing migrations: ask Dana" in _tool(ws, "Edit", edit)
    # Nothing is about reading, nor about this command.
    assert _tool(ws, "Read", {"file_path": "/repo/migrations/0012_add_index.sql"}) == ""
    assert _tool(ws, "Bash", {"command": "ls -la"}) == ""
    # A changed rule is shown again.
    asyncio.run(_change_rule(ws))
    assert "make lint, make test and make e2e" in _tool(ws, "Bash", commit)


async def _change_rule(ws: Workspace) -> None:  # noqa: F811
    async with open_container(ws.settings()) as c:
        await c.memories.append(
            ws.project,
            Layer.PROCEDURAL,
            "run make lint, make test and make e2e first",
            key="committing",
        )


def test_switched_off_the_tool_hook_says_nothing(ws: Workspace) -> None:  # noqa: F811
    asyncio.run(_seed(ws))
    payload = ws.payload("PreToolUse", tool_name="Bash", tool_input={"command": "git commit"})
    off = hook(ws, "pre-tool-use", payload, env={"MEMSTRATA_HOOKS__PRE_TOOL_USE": "false"})
    assert (off.code, off.stdout, off.stderr) == (0, "", "")


def _task_call(prompt: str) -> str:
    call = {
        "type": "tool_use",
        "id": "toolu_task",
        "name": "Task",
        "input": {"description": "Review webhooks", "prompt": prompt, "subagent_type": "reviewer"},
    }
    line = {"type": "assistant", "uuid": "t1", "message": {"role": "assistant", "content": [call]}}
    return json.dumps(line) + "\n"


def test_a_sub_agent_starts_with_its_tasks_memories_and_its_result_is_kept(
    ws: Workspace,  # noqa: F811
) -> None:
    asyncio.run(_seed(ws))
    ws.transcript.write_text(_task_call("Check that the payment webhooks verify Stripe signatures"))
    start = hook(
        ws, "subagent-start", ws.payload("SubagentStart", agent_id="a1", agent_type="reviewer")
    )
    assert start.code == 0 and start.stderr == ""
    context = start.context("SubagentStart")
    assert "Memories for this sub-agent's task" in context
    assert "verify Stripe signatures in handle()" in context
    # Claude Code's own sub-agent (the compaction: no agent type) gets nothing.
    own = hook(ws, "subagent-start", ws.payload("SubagentStart", agent_id="a2", agent_type=""))
    assert (own.code, own.stdout) == (0, "")

    agent_transcript = ws.transcript.parent / "agent-a1.jsonl"
    first = {"type": "user", "message": {"role": "user", "content": "Check the webhook signatures"}}
    agent_transcript.write_text(json.dumps(first) + "\n")
    result = "All three webhook handlers verify the Stripe-Signature header before parsing."
    stop = ws.payload(
        "SubagentStop",
        agent_id="a1",
        agent_type="reviewer",
        stop_hook_active=False,
        agent_transcript_path=str(agent_transcript),
        last_assistant_message=result,
    )
    for _ in range(2):  # the same result twice is one memory
        done = hook(ws, "subagent-stop", stop)
        assert (done.code, done.stdout, done.stderr) == (0, "", "")
    compaction = {**stop, "agent_type": "", "last_assistant_message": "<summary>x</summary>"}
    assert hook(ws, "subagent-stop", compaction).code == 0
    kept = asyncio.run(_subagent_results(ws))
    assert [(m.author, m.content, m.metadata.get("reply_to")) for m in kept] == [
        ("reviewer", result, "Check the webhook signatures")
    ]


async def _subagent_results(ws: Workspace) -> list[Any]:  # noqa: F811
    async with open_container(ws.settings()) as c:
        rows = await c.repo.list_layer(ws.project, Layer.EPISODIC, None, newest_first=False)
        return [m for m in rows if m.metadata.get("kind") == "subagent_result"]
