"""Summaries of a conversation are written from its session's scratchpad snippets too."""

from __future__ import annotations

import pytest

from memory_core.domain.session_notes import notes_digest, notes_transcript
from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import FrozenClock
from tests.mcp_client import call
from tests.server.test_conversation_tools import connect, fill, small

NOTE = "Deploys go through staging first; the user confirmed it."


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


async def test_the_fallback_summary_keeps_the_sessions_scratchpad_notes(
    settings: Settings, clock: FrozenClock
) -> None:
    async with connect(small(settings), clock) as client:
        await call(client, "start_session", session_id="s1")
        await call(client, "scratchpad_write", session_id="s1", snippet=NOTE)
        await call(client, "scratchpad_write", session_id="other", snippet="not this session")
        await fill(client, "s1", 5)
        done = await call(client, "compress_session", session_id="s1", source="fallback")
        text = done["summary"]["text"]
        assert "user messages" in text and f"scratchpad notes: {NOTE}" in text
        assert "not this session" not in text


async def test_a_summary_request_carries_the_sessions_scratchpad_notes(
    settings: Settings, clock: FrozenClock
) -> None:
    async with connect(small(settings), clock) as client:
        await call(client, "start_session", session_id="s1")
        await call(client, "scratchpad_write", session_id="s1", snippet=NOTE)
        await fill(client, "s1", 4)
        asked = await call(client, "compress_session", session_id="s1")
        transcript = asked["summary_request"]["transcript"]
        assert "turn 0" in transcript and f"- {NOTE}" in transcript


def test_notes_stay_within_their_budget() -> None:
    notes = [f"note {i} " + "x" * 500 for i in range(64)]
    assert len(notes_transcript(notes).encode()) <= 2_000
    assert notes_transcript([]) == ""
    digest = notes_digest("5 user messages, first: " + "y" * 400, notes, 300)
    assert len(digest.encode()) <= 300 and "scratchpad notes: note 0" in digest
    assert notes_digest("short", [], 300) == "short"
