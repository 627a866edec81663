"""Every hook that reads a transcript reads it bounded (issue 34, point 4), through the real
`memstrata hook` commands: a FIFO or a device named as the transcript is refused at once
(exit 0, nothing on stdout, the field named on stderr), and a capture resumes at its byte
offset, so a transcript that grows is recorded piece by piece exactly as in one piece."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from server.hooks.services import open_hook_services
from tests.e2e.test_hooks import S1, Workspace, hook, ws  # noqa: F401 (fixture)
from tests.hook_transcript import first_part, noisy_part, second_part

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize(
    ("command", "event", "field"),
    [
        ("session-end", "SessionEnd", "transcript_path"),
        ("pre-compact", "PreCompact", "transcript_path"),
        ("stop", "Stop", "transcript_path"),
        ("subagent-start", "SubagentStart", "transcript_path"),
        ("subagent-stop", "SubagentStop", "agent_transcript_path"),
    ],
)
def test_a_transcript_that_is_no_regular_file_is_refused_at_once(
    ws: Workspace,  # noqa: F811
    tmp_path: Path,
    kind: str,
    command: str,
    event: str,
    field: str,
) -> None:
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)  # no writer: a blocking open or read would wait for ever
    payload = ws.payload(
        event,
        agent_id="a1",
        agent_type="reviewer",
        last_assistant_message="The webhook handler verifies Stripe signatures.",
    )
    payload[field] = str(path)
    run = hook(ws, command, payload)
    assert (run.code, run.stdout) == (0, "")
    assert f"{field} is not a regular file" in run.stderr


def test_a_growing_transcript_is_recorded_as_in_one_piece(
    ws: Workspace,  # noqa: F811
    tmp_path: Path,
) -> None:
    parts = [first_part(), second_part(), noisy_part()]
    for n in range(len(parts)):
        ws.transcript.write_text("".join(line for part in parts[: n + 1] for line in part))
        run = hook(ws, "pre-compact", ws.payload("PreCompact", trigger="auto"))
        assert (run.code, run.stdout, run.stderr) == (0, "", "")
    pieces = asyncio.run(_entries(ws))

    other = Workspace(ws.repo, tmp_path / "whole.db", ws.transcript, ws.env)
    run = hook(
        other, "pre-compact", other.payload("PreCompact"), env={"MEMSTRATA_DB": str(other.db)}
    )
    assert (run.code, run.stdout, run.stderr) == (0, "", "")
    assert pieces == asyncio.run(_entries(other)) and len(pieces) > 20


async def _entries(ws: Workspace) -> list[tuple[object, ...]]:  # noqa: F811
    async with open_hook_services(ws.settings()) as svc:
        entries = (await svc.conversations.export(ws.project, S1)).entries
    return [(e.type, e.role, e.content, e.tool_name, e.is_error) for e in entries]
