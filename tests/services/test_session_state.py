"""The session view and the events between marks, on both backends (the `storage` fixture)."""

from __future__ import annotations

from typing import cast

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import CachedResult, EntryType, Role
from memory_core.domain.models import Layer
from memory_core.ports.change_marks import ChangeMarks
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService
from memory_core.services.session_state import SessionStateService, session_view_text
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock

P = "p"
SECRET = "the launch code is swordfish"


def marks_of(storage: StorageUnderTest) -> ChangeMarks:
    return cast(ChangeMarks, storage.conversations().change_marks())  # type: ignore[attr-defined]


def services(
    storage: StorageUnderTest, clock: FrozenClock
) -> tuple[ConversationService, SessionStateService]:
    conv = ConversationService(
        store=storage.conversations(),
        clock=clock,
        policy=ConversationPolicy(recent_window=1, min_compress_entries=1, auto_compress=False),
    )
    return conv, SessionStateService(conv, storage.conversations())


async def test_events_name_each_change_without_the_text(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    conv, state = services(storage, clock)
    marks = marks_of(storage)
    key = (P, "s1")
    assert (await marks.sessions([key]))[key] is None
    await conv.start(P, "s1")
    started = (await marks.sessions([key]))[key]
    assert [e.name for e in await state.events(P, "s1", None, started)] == ["session:started"]

    await conv.add_entry(P, "s1", type=EntryType.MESSAGE, role=Role.USER, content=SECRET)
    clock.advance(minutes=1)
    await conv.add_entry(P, "s1", type=EntryType.TOOL_RESULT, content=f"{SECRET} again")
    clock.advance(minutes=1)
    await conv.add_entry(P, "s1", type=EntryType.MESSAGE, role=Role.ASSISTANT, content="ok")
    added = (await marks.sessions([key]))[key]
    events = await state.events(P, "s1", started, added)
    assert [e.line().split(" ")[0] for e in events] == ["entry:added"] * 3
    assert "type=message" in events[0].line() and "type=tool_result" in events[1].line()

    result = await conv.compress(P, "s1", "fallback")
    assert result.status == "compressed"
    compressed = (await marks.sessions([key]))[key]
    (event,) = await state.events(P, "s1", added, compressed)
    assert event.name == "compressed"
    assert event.details["tokens_saved"] == result.tokens_saved
    assert event.details["source"] == "fallback"

    await storage.conversations().cache_put(
        P,
        "s1",
        CachedResult(
            key="k",
            tool_name="search",
            parameters={"q": "x"},
            result={"hits": []},
            duration=3,
            remaining=3,
            created_at=clock.now(),
        ),
    )
    cached = (await marks.sessions([key]))[key]
    assert [e.name for e in await state.events(P, "s1", compressed, cached)] == ["cache:changed"]

    await conv.clear(P, "s1", confirm=True)
    assert (await marks.sessions([key]))[key] is None
    cleared = await state.events(P, "s1", cached, None)
    assert [e.line() for e in cleared] == ["session:cleared session=s1 project=p"]
    every_line = " ".join(e.line() for e in [*events, event, *cleared])
    assert "swordfish" not in every_line


async def test_project_marks_change_on_add_and_delete_only(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    marks = marks_of(storage)
    empty = (await marks.projects([P]))[P]
    stored = await service.append(P, Layer.EPISODIC, "The billing webhook retries three times")
    after_add = (await marks.projects([P]))[P]
    assert after_add != empty and sum(n for _, _, n, _ in after_add.counts) == 1
    await service.append("other", Layer.EPISODIC, "Another project's memory")
    assert (await marks.projects([P]))[P] == after_add
    await service.forget(P, stored.memory.id)
    assert sum(n for _, _, n, _ in (await marks.projects([P]))[P].counts) == 0


async def test_the_view_shows_counts_summaries_cache_and_the_context(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    conv, state = services(storage, clock)
    await conv.start(P, "s1")
    for text in ("Where is the billing service deployed?", "On fly.io, region ams.", "Thanks"):
        clock.advance(minutes=1)
        await conv.add_entry(P, "s1", type=EntryType.MESSAGE, role=Role.USER, content=text)
    await conv.compress(P, "s1", "fallback")
    await conv.cache_put(P, "s1", "search", {"q": "billing"}, {"hits": 2}, duration=3)

    text = session_view_text(await state.read(P, "s1"))

    assert text.startswith("Session: s1 | Project: p | Exchanges: 0 | Summary: ")
    assert "Entries: 3 (1 active, 2 compressed)" in text
    assert "Compressions: 1 (summarizer 0, client 0, fallback 1)" in text
    assert "#1 entries 1-2:" in text and "by fallback" in text
    assert 'search({"q":"billing"}): 3/3 exchanges remaining' in text
    assert "What get_session_context hands the model now" in text
    assert "Thanks" in text  # the newest entry, word for word
