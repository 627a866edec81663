"""HookSessionStore contract on SQLite and PostgreSQL (the `storage` fixture runs both)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from memory_core.domain.capture_place import CapturePlace
from memory_core.domain.hook_session import TranscriptCursor
from tests.backends import StorageUnderTest
from tests.fakes import START, FrozenClock


async def test_unknown_session_has_no_state(storage: StorageUnderTest) -> None:
    assert await storage.hook_sessions().get("p", "nope") is None


async def test_first_start_context_wins_and_is_returned(storage: StorageUnderTest) -> None:
    store = storage.hook_sessions()
    first = await store.save_start("p", "s1", "first text", 3, START)
    again = await store.save_start("p", "s1", "second text", 4, START)
    assert first.start_context == again.start_context == "first text"
    assert again.start_tokens == 3
    other = await store.save_start("q", "s1", "other project", 2, START)
    assert other.start_context == "other project"  # sessions are per project


async def test_injected_ids_are_new_only_once_in_order(storage: StorageUnderTest) -> None:
    store = storage.hook_sessions()
    assert await store.add_injected("p", "s", [5, 3, 5], START) == [5, 3]
    assert await store.add_injected("p", "s", [3, 7, 1], START) == [7, 1]
    assert await store.add_injected("p", "s", [], START) == []
    state = await store.get("p", "s")
    assert state is not None and state.injected == (5, 3, 7, 1)
    assert await store.add_injected("p", "other", [5], START) == [5]


async def test_concurrent_injections_never_hand_out_an_id_twice(
    storage: StorageUnderTest,
) -> None:
    store = storage.hook_sessions()
    results = await asyncio.gather(
        *(store.add_injected("p", "s", [1, 2, 3], START) for _ in range(4))
    )
    assert sorted(i for r in results for i in r) == [1, 2, 3]


async def test_transcript_cursor_and_latest_summary(storage: StorageUnderTest) -> None:
    store, clock = storage.hook_sessions(), FrozenClock()
    assert await store.latest_summary("p", None) is None
    await store.save_transcript("p", "old", TranscriptCursor(4, "u4"), 11, clock.now())
    clock.advance(minutes=5)
    await store.save_transcript("p", "new", TranscriptCursor(9, None), 12, clock.now())
    await store.save_transcript(
        "p", "none", TranscriptCursor(1, None), None, clock.advance(minutes=1)
    )
    state = await store.get("p", "old")
    assert (
        state is not None and state.cursor == TranscriptCursor(4, "u4") and state.summary_id == 11
    )
    assert await store.latest_summary("p", None) == 12
    assert await store.latest_summary("p", "new") == 11  # a session is not its own "last"
    assert await store.latest_summary("q", None) is None


async def test_the_capture_place_is_kept_whole(storage: StorageUnderTest) -> None:
    store, clock = storage.hook_sessions(), FrozenClock()
    assert await store.get_place("p", "s") == CapturePlace()
    place = CapturePlace(TranscriptCursor(7, "u7"), offset=2**40, entry_mark=31, summary_id=4)
    await store.save_place("p", "s", replace(place, title="Stripe webhooks"), clock.now())
    await store.save_stop_offset("p", "s", 99, clock.now())  # the Stop hook's own place
    assert await store.get_place("p", "s") == replace(place, title="Stripe webhooks")
    state = await store.get("p", "s")
    assert state is not None and state.cursor == TranscriptCursor(7, "u7")
    assert state.stop_offset == 99 and state.summary_id == 4
    # Moving the cursor alone forgets where it is in bytes and which entry it follows.
    await store.save_transcript("p", "s", TranscriptCursor(2, None), None, clock.now())
    assert await store.get_place("p", "s") == CapturePlace(TranscriptCursor(2, None))
