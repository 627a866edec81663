"""The whole loop through the hook commands: what one session said comes back in the next.

Session 1 decides something in conversation and ends; its SessionEnd hook stores the prompts
and answers (without vectors: a hook loads no model) and asks the warm server to embed them.
Session 2 asks for it in other words: with the warm server up, the prompt hook injects it by
meaning; without a server, the session-start context still shows it among recent memories,
and the prompt hook falls back to its own keyword search, which does not match a paraphrase.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import memstrata_exe
from tests.e2e.test_warm_hooks import Workspace, runtime  # noqa: F401 (fixture)

pytestmark = pytest.mark.e2e

DECISION = "We moved the payment webhooks from Flask to FastAPI in October."
QUESTION = "which web framework do our payment callbacks run on now?"
MODEL = {"MEMSTRATA_EMBEDDING_MODEL": "all-MiniLM-L6-v2-int8", "MEMSTRATA_HOOKS__WARM_WAIT": "10"}


def _line(uuid: str, kind: str, text: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return (
        json.dumps(
            {
                "type": kind,
                "uuid": uuid,
                "sessionId": "s1",
                "timestamp": "2026-11-20T10:00:00Z",
                "message": {"role": kind, "content": content},
            }
        )
        + "\n"
    )


@pytest.fixture
def loop(tmp_path: Path, runtime: Path) -> Iterator[Workspace]:  # noqa: F811
    """An empty checkout: nothing stored but what session 1 says."""
    repo = tmp_path / "shop-api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    env = {
        "MEMSTRATA_DB": str(tmp_path / "memory.db"),
        "MEMSTRATA_PROJECT": "fallback",
        "MEMSTRATA_PROJECT_SCOPE": "git",
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "MEMSTRATA_SCHEDULE__ENABLED": "false",
        "XDG_RUNTIME_DIR": str(runtime),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
    }
    ws = Workspace(repo, runtime, env)
    yield ws
    for server in ws.servers:
        if server.proc.poll() is None:
            server.kill()


def _end_session_one(ws: Workspace) -> None:
    transcript = ws.repo / "s1.jsonl"
    transcript.write_text(
        _line("u1", "user", "Why do the payment webhooks time out less since last month?")
        + _line("a1", "assistant", DECISION + " Its async handlers answer Stripe in time.")
    )
    payload = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(ws.repo),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    done = ws.run([str(memstrata_exe()), "hook", "session-end"], payload, MODEL)
    assert (done.stdout, done.stderr) == ("", "")


def _start(ws: Workspace, session: str) -> str:
    payload = {
        "session_id": session,
        "cwd": str(ws.repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = ws.run([str(memstrata_exe()), "hook", "session-start"], payload, MODEL)
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def test_what_one_session_decided_is_injected_for_the_next_sessions_paraphrase(
    loop: Workspace,
) -> None:
    server = loop.serve(**MODEL)
    server.wait_for("hooks.listening")
    _end_session_one(loop)
    server.wait_for("vectors.backfilled")  # the hook asked the warm server to embed them
    path, context = loop.hook(QUESTION, "s2", **MODEL)
    assert path == "warm"
    assert context is not None and DECISION in context
    assert "[episodic, assistant, 2026-11-20]" in context  # who said it, and when


def test_without_a_server_the_next_session_still_starts_with_it(loop: Workspace) -> None:
    _end_session_one(loop)
    assert DECISION in _start(loop, "s2")
    path, context = loop.hook(QUESTION, "s2", **MODEL)
    assert path == "direct"  # no server: the hook's own keyword search, as before
    assert context is None or DECISION not in context  # shown at start: never twice
