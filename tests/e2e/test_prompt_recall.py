"""Per-prompt recall through `memstrata hook user-prompt-submit` (the keyword path: no warm
server, no model): an absolute floor, rules only when their condition matches the prompt,
never the session's own words, never a digest, nothing marked as used."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memory_core.domain.hook_session import SESSION_SUMMARY_KIND
from memory_core.domain.models import Layer
from server.container import open_container
from tests.e2e.test_hooks import S1, S2, Workspace, hook, ws  # noqa: F401 (the fixture)
from tests.hook_transcript import first_part, noisy_part, second_part

pytestmark = pytest.mark.e2e

OWNERS = {
    "changing the coupons API": "ask Dana, who owns the coupons code, first",
    "changing the payments module": "ask Lee, who owns payments, first",
    "changing the search module": "ask Kim, who owns search, first",
    "editing the checkout flow": "ask Ola, who owns checkout, first",
}


async def _seed_owners(ws: Workspace) -> dict[str, int]:  # noqa: F811
    async with open_container(ws.settings()) as c:
        ids = {}
        for condition, action in OWNERS.items():
            done = await c.memories.append(ws.project, Layer.PROCEDURAL, action, key=condition)
            ids[condition] = done.memory.id
        done = await c.memories.append(ws.project, Layer.EPISODIC, "Dana owns the coupons code.")
        ids["dana"] = done.memory.id
        return ids


async def _access(ws: Workspace, memory_id: int) -> int:  # noqa: F811
    async with open_container(ws.settings()) as c:
        memory = await c.repo.get(ws.project, memory_id)
        assert memory is not None
        return memory.access_count


def _prompt(ws: Workspace, prompt: str, session: str = S2) -> str:  # noqa: F811
    run = hook(ws, "user-prompt-submit", ws.payload("UserPromptSubmit", session, prompt=prompt))
    assert run.code == 0 and run.stderr == "", run.stderr
    return run.context("UserPromptSubmit") if run.stdout else ""


def test_only_the_rule_whose_condition_matches_and_nothing_weak(ws: Workspace) -> None:  # noqa: F811
    ids = asyncio.run(_seed_owners(ws))
    before = asyncio.run(_access(ws, ids["dana"]))
    text = _prompt(ws, "Who owns the coupons code, and can I change its public API?")
    assert text.startswith("<memstrata-memory>") and text.endswith("</memstrata-memory>")
    assert f"#{ids['changing the coupons API']} " in text
    assert "Dana owns the coupons code." in text
    for other in ("Lee", "Kim", "Ola"):
        assert f"ask {other}" not in text
    # Shown is not used: the prompt hook's search marks nothing.
    assert asyncio.run(_access(ws, ids["dana"])) == before
    # Nothing in the store is about this: nothing at all, however the hits rank.
    assert _prompt(ws, "How do I rotate the TLS certificates of the staging cluster?") == ""


def test_never_the_sessions_own_words_nor_a_digest(ws: Workspace) -> None:  # noqa: F811
    ws.transcript.write_text("".join(first_part() + second_part() + noisy_part()))
    end = hook(ws, "session-end", ws.payload("SessionEnd", reason="other"))
    assert (end.code, end.stderr) == (0, "")

    async def digests() -> list[Any]:
        async with open_container(ws.settings()) as c:
            rows = await c.repo.list_layer(ws.project, Layer.EPISODIC, None, newest_first=True)
            return [m for m in rows if m.metadata.get("kind") == SESSION_SUMMARY_KIND]

    assert len(asyncio.run(digests())) == 1
    question = "Which port does the payments service listen on in staging?"
    # The session that said it: the model has it already.
    assert "8443" not in _prompt(ws, question, session=S1)
    # The next session: what was said comes back, the digest (which repeats it) does not.
    later = _prompt(ws, question, session=S2)
    assert "Staging runs the payments service on port 8443." in later
    assert "Last answer:" not in later and "Session of" not in later
