"""`memstrata session` from a terminal: the session resource's view, and the session list."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memory_core.domain.conversation import EntryType, Role
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.server.test_cli import db, run_cli

__all__ = ["db"]  # the fixture, shared with test_cli


def seed_session(db: Path) -> None:
    settings = Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))

    async def write() -> None:
        async with open_container(settings) as c:
            conv = c.conversations
            await conv.start("alpha", "s1")
            await conv.update_config("alpha", "s1", {"recent_window": 1, "min_compress_entries": 1})
            for text in ("Where does billing deploy?", "To fly.io, region ams.", "Thanks"):
                await conv.add_entry(
                    "alpha", "s1", type=EntryType.MESSAGE, role=Role.USER, content=text
                )
            await conv.compress("alpha", "s1", "fallback")

    asyncio.run(write())


def test_session_prints_the_view_and_lists_sessions(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_session(db)
    capsys.readouterr()
    code, out, _ = run_cli(capsys, "session", "s1", "-p", "alpha")
    assert code == 0
    assert out.startswith("Session: s1 | Project: alpha | Exchanges: 0")
    assert "Entries: 3 (1 active, 2 compressed)" in out
    assert "fallback 1" in out and "Thanks" in out

    code, out, _ = run_cli(capsys, "session", "s1", "-p", "alpha", "--json")
    data = json.loads(out)
    assert code == 0 and data["compressed_entries"] == 2
    assert data["summaries"][0]["source"] == "fallback"
    assert data["view"].startswith("Session: s1")

    code, out, _ = run_cli(capsys, "session", "-p", "alpha")
    assert code == 0 and out.startswith("s1  3 entries")
    code, out, err = run_cli(capsys, "session", "nope", "-p", "alpha")
    assert code == 3 and "no session 'nope' in alpha" in err
