"""The Stop hook through `memstrata hook stop`: it asks the model at most once per flow of
substance to store what it learned, never in a trivial session, never twice in a row, never
while Claude Code is already continuing because of it, and never after the model saved."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from server.hooks.events import STOP_ASK
from tests.e2e.test_hooks import Workspace, hook, ws  # noqa: F401 (the fixture)
from tests.hook_transcript import first_part, noisy_part, second_part

pytestmark = pytest.mark.e2e


def _stop(ws: Workspace, **fields: Any) -> dict[str, Any] | None:  # noqa: F811
    run = hook(ws, "stop", ws.payload("Stop", stop_hook_active=False, **fields))
    assert run.code == 0 and run.stderr == "", run.stderr
    return json.loads(run.stdout) if run.stdout else None


def _save_call(n: int) -> str:
    call = {
        "type": "tool_use",
        "id": f"toolu_save{n}",
        "name": "mcp__plugin_memstrata_memstrata__append",
        "input": {"layer": "episodic", "content": "We verify Stripe signatures in handle()."},
    }
    line = {
        "type": "assistant",
        "uuid": f"save{n}",
        "timestamp": "2026-11-23T10:10:00Z",
        "message": {"role": "assistant", "content": [call]},
    }
    return json.dumps(line) + "\n"


def test_a_trivial_session_is_never_asked(ws: Workspace) -> None:  # noqa: F811
    ws.transcript.write_text("".join(first_part()))  # one prompt, one tool call
    assert _stop(ws) is None


def test_a_flow_of_substance_is_asked_once_and_the_hook_cannot_loop(ws: Workspace) -> None:  # noqa: F811
    ws.transcript.write_text("".join(first_part() + second_part() + noisy_part()))
    # Claude Code is already continuing because of a Stop hook: never ask.
    assert hook(ws, "stop", ws.payload("Stop", stop_hook_active=True)).stdout == ""
    asked = _stop(ws)
    assert asked == {"decision": "block", "reason": STOP_ASK}
    assert len(STOP_ASK.split()) < 60  # one short sentence
    # The same flow again (the follow-up Stop of the same turn, or the next one): nothing.
    assert _stop(ws) is None
    # A new flow with too little in it: nothing either.
    with ws.transcript.open("a") as out:
        out.write("".join(first_part()))
    assert _stop(ws) is None


def test_a_flow_in_which_the_model_saved_is_not_asked(ws: Workspace) -> None:  # noqa: F811
    ws.transcript.write_text("".join(first_part() + second_part() + noisy_part()) + _save_call(1))
    assert _stop(ws) is None
    # The save started a new flow: it is asked only once that one has substance of its own.
    with ws.transcript.open("a") as out:
        out.write("".join(noisy_part()))  # 4 prompts, 4 tool calls
    assert _stop(ws) is None
    with ws.transcript.open("a") as out:
        out.write("".join(first_part()))  # a fifth tool call
    assert _stop(ws) == {"decision": "block", "reason": STOP_ASK}


def test_switched_off_it_never_speaks(ws: Workspace) -> None:  # noqa: F811
    ws.transcript.write_text("".join(first_part() + second_part() + noisy_part()))
    off = hook(ws, "stop", ws.payload("Stop"), env={"MEMSTRATA_HOOKS__STOP_ASK": "false"})
    assert (off.code, off.stdout, off.stderr) == (0, "", "")


def test_a_transcript_that_is_not_a_regular_file_is_refused_at_once(
    ws: Workspace,  # noqa: F811
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    run = hook(ws, "stop", {**ws.payload("Stop"), "transcript_path": str(fifo)})
    assert (run.code, run.stdout) == (0, "")
    assert "not a regular file" in run.stderr
