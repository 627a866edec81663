"""ConversationStore.add_entries on SQLite and PostgreSQL: a batch is numbered like single adds."""

from __future__ import annotations

import pytest

from memory_core.domain.conversation import EntryDraft, EntryType, Role
from memory_core.errors import SessionNotFoundError
from tests.backends import StorageUnderTest
from tests.fakes import START


def _draft(n: int, kind: EntryType = EntryType.MESSAGE) -> EntryDraft:
    if kind is EntryType.TOOL_CALL:
        return EntryDraft(
            type=kind,
            role=Role.ASSISTANT,
            content="",
            tool_name="Bash",
            arguments={"command": f"ls {n}"},
            token_count=3,
        )
    return EntryDraft(type=kind, role=Role.USER, content=f"entry {n}", token_count=2)


async def test_a_batch_follows_single_entries_in_order_and_numbers(
    storage: StorageUnderTest,
) -> None:
    store = storage.conversations()
    await store.create_session("p", "s", START)
    single = await store.add_entry("p", "s", _draft(1), START)
    batch = await store.add_entries(
        "p", "s", [_draft(2), _draft(3, EntryType.TOOL_CALL), _draft(4)], START
    )
    after = await store.add_entry("p", "s", _draft(5), START)
    assert [single.id, *(e.id for e in batch), after.id] == [1, 2, 3, 4, 5]
    stored = await store.entries("p", "s", active_only=False)
    assert [(e.id, e.content, e.tool_name) for e in stored] == [
        (1, "entry 1", None),
        (2, "entry 2", None),
        (3, "", "Bash"),
        (4, "entry 4", None),
        (5, "entry 5", None),
    ]
    assert stored[2].arguments == {"command": "ls 3"}
    assert stored[1:4] == batch
    assert (await store.get_session("p", "s")).last_entry == 5


async def test_an_empty_batch_writes_nothing_and_an_unknown_session_is_refused(
    storage: StorageUnderTest,
) -> None:
    store = storage.conversations()
    await store.create_session("p", "s", START)
    assert await store.add_entries("p", "s", [], START) == []
    assert (await store.get_session("p", "s")).last_entry == 0
    with pytest.raises(SessionNotFoundError):
        await store.add_entries("p", "missing", [_draft(1)], START)
