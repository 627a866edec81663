"""TranscriptRecorder: conversation entries with roles, idempotent, one summary per session."""

from __future__ import annotations

from memory_core.config import ConversationPolicy
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.models import Layer
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService
from memory_core.services.session_start import SESSION_SUMMARY_KIND
from memory_core.services.transcripts import COMPACTION_SOURCE, TranscriptRecorder
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock
from tests.hook_transcript import SESSION, first_part, second_part

P = "shop"


def recorder(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> tuple[TranscriptRecorder, ConversationService]:
    conversations = ConversationService(
        store=storage.conversations(),
        clock=clock,
        policy=ConversationPolicy(),
    )
    return (
        TranscriptRecorder(
            conversations=conversations,
            memories=service,
            hook_sessions=storage.hook_sessions(),
            clock=clock,
        ),
        conversations,
    )


async def test_entries_keep_roles_tools_and_are_redacted(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, conversations = recorder(storage, clock, service)
    result = await rec.record(P, SESSION, first_part())
    assert result.entries_added == 5 and result.malformed_lines == 1
    entries = (await conversations.export(P, SESSION)).entries
    shape = [(e.type, e.role, e.tool_name) for e in entries]
    assert shape == [
        (EntryType.MESSAGE, Role.USER, None),
        (EntryType.MESSAGE, Role.ASSISTANT, None),
        (EntryType.TOOL_CALL, Role.ASSISTANT, "Read"),
        (EntryType.TOOL_RESULT, Role.SYSTEM, "Read"),
        (EntryType.MESSAGE, Role.ASSISTANT, None),
    ]
    assert entries[2].arguments == {"file_path": "/home/dev/shop/webhooks.py"}
    assert "sk_live_" not in entries[3].content and "[REDACTED:stripe_key]" in entries[3].content


async def test_recording_again_or_a_grown_transcript_adds_only_what_is_new(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, conversations = recorder(storage, clock, service)
    await rec.record(P, SESSION, first_part())
    again = await rec.record(P, SESSION, first_part())
    assert again.entries_added == 0
    grown = await rec.record(P, SESSION, first_part() + second_part())
    assert grown.entries_added == 5
    entries = (await conversations.export(P, SESSION)).entries
    assert len(entries) == 10
    assert [e.source for e in entries if e.type is EntryType.CONTEXT] == [COMPACTION_SOURCE]
    assert (await rec.record(P, SESSION, first_part() + second_part())).entries_added == 0


async def test_the_session_summary_is_one_episodic_memory_replaced_not_duplicated(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    first = await rec.record(P, SESSION, first_part())
    assert first.summary_id is not None
    grown = await rec.record(P, SESSION, first_part() + second_part())
    summaries = [
        m
        for m in await storage.repo().list_layer(P, Layer.EPISODIC, SESSION, newest_first=True)
        if m.metadata.get("kind") == SESSION_SUMMARY_KIND
    ]
    assert [m.id for m in summaries] == [grown.summary_id]
    text = summaries[0].content
    assert "Stripe webhook signature fix" in text  # the transcript's title
    assert "signature verification" in text  # the compaction summary
    assert "Bash" in text and "Read" in text
    assert summaries[0].metadata["title"] == "Stripe webhook signature fix"
    state = await storage.hook_sessions().get(P, SESSION)
    assert state is not None and state.summary_id == grown.summary_id
    assert await storage.hook_sessions().latest_summary(P, None) == grown.summary_id
