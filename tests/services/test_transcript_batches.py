"""TranscriptRecorder writes a long transcript's entries in batches, and a cut between a batch
and the place after it writes nothing twice."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.conversation import EntryType
from memory_core.domain.hook_session import SESSION_SUMMARY_KIND
from memory_core.domain.models import Layer
from memory_core.services import transcripts
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService
from memory_core.services.transcripts import TranscriptRecorder
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock

P = "shop"
SESSION = "b1a2c3d4-0000-4000-8000-000000000001"


class _Cut(Exception):
    """The process died here."""


class _CutAfterFirstBatch:
    """A hook session store that dies saving the place after the first batch of entries."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.cut = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def save_place(self, project: str, session_id: str, place: CapturePlace, now: Any) -> Any:
        if place.cursor.lines > 0 and not self.cut:
            self.cut = True
            raise _Cut
        return await self._inner.save_place(project, session_id, place, now)


def _line(uuid: str, kind: str, content: Any, n: int) -> str:
    record = {
        "type": kind,
        "uuid": uuid,
        "sessionId": SESSION,
        "timestamp": f"2025-12-01T{8 + n // 60:02d}:{n % 60:02d}:00.000Z",
        "message": {"role": kind, "content": content},
    }
    return json.dumps(record) + "\n"


def _turns(count: int, long_tool: int | None = None) -> list[str]:
    """`count` turns of a prompt, a Bash call, its result and the answer."""
    lines = []
    for n in range(count):
        tool = "B" * 200 if n == long_tool else "Bash"  # over the 128-character tool name cap
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": tool, "input": {"command": "ls"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"file{n}"}
        lines += [
            _line(f"p{n}", "user", f"Is worker {n} of the queue up?", n),
            _line(f"c{n}", "assistant", [call], n),
            _line(f"r{n}", "user", [result], n),
            _line(f"a{n}", "assistant", [{"type": "text", "text": f"Worker {n} is up."}], n),
        ]
    return lines


def _recorder(
    storage: StorageUnderTest, service: MemoryService, hooks: Any = None
) -> tuple[TranscriptRecorder, ConversationService]:
    clock = FrozenClock(datetime(2026, 11, 24, 8, tzinfo=UTC))
    conversations = ConversationService(
        store=storage.conversations(), clock=clock, policy=ConversationPolicy()
    )
    recorder = TranscriptRecorder(
        conversations=conversations,
        memories=service,
        hook_sessions=hooks or storage.hook_sessions(),
        clock=clock,
    )
    return recorder, conversations


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "_ENTRY_BATCH", 10)


def _shape(entries: Any) -> list[tuple[Any, ...]]:
    return [(e.id, e.type, e.role, e.content, e.tool_name) for e in entries]


async def test_a_long_transcript_is_stored_in_order_and_recorded_again_adds_nothing(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    rec, conversations = _recorder(storage, service)
    lines = _turns(30)
    result = await rec.record(P, SESSION, lines)
    assert result.entries_added == 120 and result.entries_skipped == 0
    entries = (await conversations.export(P, SESSION)).entries
    assert [e.id for e in entries] == list(range(1, 121))
    assert [e.content for e in entries if e.type is EntryType.MESSAGE][:4] == [
        "Is worker 0 of the queue up?",
        "Worker 0 is up.",
        "Is worker 1 of the queue up?",
        "Worker 1 is up.",
    ]
    place = await storage.hook_sessions().get_place(P, SESSION)
    assert place.entry_mark == 120 and place.cursor.lines == len(lines)
    assert (await rec.record(P, SESSION, lines)).entries_added == 0


async def test_a_cut_between_a_batch_and_its_place_writes_nothing_twice(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    lines = _turns(30)
    cut = _CutAfterFirstBatch(storage.hook_sessions())
    rec, conversations = _recorder(storage, service, cut)
    with pytest.raises(_Cut):
        await rec.record(P, SESSION, lines)
    assert len((await conversations.export(P, SESSION)).entries) >= 10  # the batch is stored
    rec, conversations = _recorder(storage, service)
    result = await rec.record(P, SESSION, lines)
    assert result.entries_added == 120
    entries = (await conversations.export(P, SESSION)).entries
    assert [e.id for e in entries] == list(range(1, 121))
    clean, _ = _recorder(storage, service)
    await clean.record(P, "other-session", lines)
    others = (await conversations.export(P, "other-session")).entries
    assert _shape(entries) == _shape(others)


async def test_an_entry_the_store_refuses_is_skipped_and_the_batch_kept(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    rec, conversations = _recorder(storage, service)
    result = await rec.record(P, SESSION, _turns(5, long_tool=2))
    # The call and its result (which names the call's tool) are refused; the rest is kept.
    assert (result.entries_added, result.entries_skipped) == (18, 2)
    entries = (await conversations.export(P, SESSION)).entries
    assert [e.id for e in entries] == list(range(1, 19))
    assert [e.tool_name for e in entries if e.type is EntryType.TOOL_CALL] == ["Bash"] * 4


async def _digests(storage: StorageUnderTest) -> int:
    rows = await storage.repo().list_layer(P, Layer.EPISODIC, SESSION, newest_first=False)
    return sum(1 for m in rows if m.metadata.get("kind") == SESSION_SUMMARY_KIND)


@pytest.mark.parametrize("said_batch", [500, 10])
async def test_a_recording_asked_to_stop_leaves_the_rest_to_the_next_one(
    storage: StorageUnderTest,
    service: MemoryService,
    monkeypatch: pytest.MonkeyPatch,
    said_batch: int,
) -> None:
    """Stopped after its first batch (of entries, or of said turns with `said_batch` 10)."""
    monkeypatch.setattr(transcripts, "_SAID_BATCH", said_batch)
    lines = _turns(30)
    rec, conversations = _recorder(storage, service)
    first = await rec.record(P, SESSION, lines, stop=lambda: True)
    assert not first.complete and first.summary_id is None
    assert first.entries_added < 120
    assert await _digests(storage) == 0  # left for the recording that finishes
    done = await rec.record(P, SESSION, lines, stop=lambda: False)
    assert done.complete and done.summary_id is not None
    assert first.entries_added + done.entries_added == 120
    entries = (await conversations.export(P, SESSION)).entries
    assert [e.id for e in entries] == list(range(1, 121))
    clean, _ = _recorder(storage, service)
    await clean.record(P, "other-session", lines)
    assert _shape(entries) == _shape((await conversations.export(P, "other-session")).entries)
    assert await _digests(storage) == 1
