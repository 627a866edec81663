"""SessionEnd on a long session answers within Claude Code's budget and the capture completes.

The real `memstrata hook session-end` on a 6,000-line Claude Code transcript: the hook process
records for MEMSTRATA_HOOKS__SESSION_END_INLINE seconds (here 0.05, so the hand-over happens
on any machine), hands the rest to a process of its own and exits 0 with nothing on stdout;
that process completes the capture, which ends equal to one recorded in a single run. Nothing
here asserts on time (the completed capture is waited for, bounded only against a hang).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bench.capture import SESSION, transcript
from memory_core.domain.models import Layer
from memory_core.errors import SessionNotFoundError
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.e2e.conftest import run_session_end

pytestmark = pytest.mark.e2e

_LONG_WAIT = 180.0


def _run(root: Path, name: str, inline: str, transcript_path: Path) -> Settings:
    db = root / f"{name}.db"
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": "shop",
        "MEMSTRATA_PROJECT_SCOPE": "fixed",
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "MEMSTRATA_HOOKS__SESSION_END_INLINE": inline,
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
    } | ({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})
    run_session_end(env, root, SESSION, transcript_path, timeout=_LONG_WAIT)
    return Settings(
        db=db,
        project="shop",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
    )


async def _captured(
    settings: Settings,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The session's entries and the project's memories (said turns and the digest)."""
    async with open_container(settings) as c:
        try:
            entries = (await c.conversations.export("shop", SESSION)).entries
        except SessionNotFoundError:
            entries = []  # stopped among the said turns, before the first entry
        rows = await c.repo.list_layer("shop", Layer.EPISODIC, None, newest_first=False)
    return (
        [(e.id, e.type, e.role, e.content, e.tool_name) for e in entries],
        sorted((m.content, m.author, m.metadata.get("kind")) for m in rows),
    )


def test_a_long_session_end_hands_its_rest_on_and_the_capture_completes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(transcript(6000, str(tmp_path))))
    whole = asyncio.run(_captured(_run(tmp_path, "whole", "0", path)))
    handed = _run(tmp_path, "handed", "0.05", path)
    first = asyncio.run(_captured(handed))
    assert len(first[0]) < len(whole[0])  # the hook itself stopped early
    stop = time.monotonic() + _LONG_WAIT
    while asyncio.run(_captured(handed)) != whole:
        assert time.monotonic() < stop, "the handed-on capture never completed"
        time.sleep(0.2)
