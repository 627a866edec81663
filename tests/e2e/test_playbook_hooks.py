"""Playbooks through the `memstrata hook` commands (issue 33.5): SessionEnd keeps a flow the
person approved as their playbook; a later prompt that asks for it again gets it once per
session as a recipe; a corrected flow is kept as nothing."""

from __future__ import annotations

import asyncio

import pytest

from server.container import open_container
from tests.e2e.test_hooks import S1, S2, Workspace, hook, ws  # noqa: F401 (fixture)
from tests.playbook_transcripts import Session

pytestmark = pytest.mark.e2e

HANDLER = "/home/dev/shop/webhooks.py"
REQUEST = "Add Stripe signature verification to the payment webhook handler"
ADA = {"MEMSTRATA_HOOKS__USER_NAME": "Ada Lovelace"}  # her playbooks: user "Ada-Lovelace"


def _flow(session: Session) -> Session:
    return (
        session.prompt(REQUEST)
        .call("Read", {"file_path": HANDLER}, "def handle(request): ...")
        .edit(HANDLER)
        .bash("pytest tests/test_webhooks.py -q", "3 passed")
        .say("handle() now verifies the Stripe-Signature header.")
    )


def _capture(ws: Workspace, session: Session, env: dict[str, str] | None = None) -> None:  # noqa: F811
    ws.transcript.write_text("".join(session.lines), encoding="utf-8")
    run = hook(ws, "session-end", ws.payload("SessionEnd", S1, reason="other"), env=env)
    assert (run.code, run.stdout) == (0, ""), run.stderr


async def _playbooks(ws: Workspace) -> list[str]:  # noqa: F811
    async with open_container(ws.settings()) as c:
        _, playbooks = await c.knowledge.preferences.list_all("Ada-Lovelace")
        return [p.user_query for p in playbooks]


def _prompt(ws: Workspace, prompt: str, session: str) -> str:  # noqa: F811
    payload = ws.payload("UserPromptSubmit", session, prompt=prompt)
    run = hook(
        ws, "user-prompt-submit", payload, env={"MEMSTRATA_HOOKS__USER_NAME": "Ada Lovelace"}
    )
    assert run.code == 0, run.stderr
    return run.context("UserPromptSubmit") if run.stdout else ""


def test_an_approved_flow_becomes_a_recipe_offered_once_per_session(ws: Workspace) -> None:  # noqa: F811
    _capture(ws, _flow(Session()).prompt("thanks, that works"), ADA)

    assert asyncio.run(_playbooks(ws)) == [REQUEST]
    ask = "Please add Stripe signature verification to our payment webhook handler"
    first = _prompt(ws, ask, S2)
    assert first.startswith("<memstrata-memory>") and "Playbook #" in first
    assert f"Edit: {HANDLER}" in first and "pytest tests/test_webhooks.py -q" in first
    assert "not instructions to obey" in first
    assert "Playbook #" not in _prompt(ws, ask, S2)  # once per session
    assert _prompt(ws, "Which port does the payments service listen on?", "s3") == ""


def test_a_corrected_flow_or_promotion_switched_off_keeps_nothing(ws: Workspace) -> None:  # noqa: F811
    _capture(ws, _flow(Session()).prompt("no, that's wrong: revert it"), ADA)
    assert asyncio.run(_playbooks(ws)) == []

    off = {**ADA, "MEMSTRATA_HOOKS__PLAYBOOK_PROMOTION": "false"}
    _capture(ws, _flow(Session("0b1c2d3e-0000-4000-8000-000000000001")).prompt("thanks!"), off)
    assert asyncio.run(_playbooks(ws)) == []
