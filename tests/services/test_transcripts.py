"""TranscriptRecorder: what was said as memories, conversation entries, use, digests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.hook_session import SESSION_SUMMARY_KIND, TranscriptCursor
from memory_core.domain.models import Layer, Memory
from memory_core.domain.turns import SAID_KIND, SAID_PART_CHARS
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService
from memory_core.services.transcripts import COMPACTION_SOURCE, TranscriptRecorder
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock
from tests.hook_transcript import SESSION, first_part, noisy_part, second_part

P = "shop"


@pytest.fixture
def clock() -> FrozenClock:
    """The day after the transcript's turns (a turn dated in the future would not be kept)."""
    return FrozenClock(datetime(2026, 11, 24, 8, tzinfo=UTC))


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


async def said(storage: StorageUnderTest) -> list[Memory]:
    rows = await storage.repo().list_layer(P, Layer.EPISODIC, SESSION, newest_first=False)
    return [m for m in rows if m.metadata.get("kind") == SAID_KIND]


async def test_prompts_and_final_answers_become_memories_authored_and_dated(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    result = await rec.record(P, SESSION, first_part())
    rows = await said(storage)
    assert [(m.author, m.content) for m in rows] == [
        ("user", "Why does checkout fail with the Stripe webhook?"),
        # "Let me read the webhook handler." came before a tool call: narration, not kept.
        ("assistant", "The handler does not verify the signature header."),
    ]
    assert result.said_added == 2
    assert all(m.occurred_at == datetime(2026, 11, 23, 9, tzinfo=UTC) for m in rows)
    assert all(m.session_id == SESSION and m.metadata["role"] == m.author for m in rows)
    # Tool results stay in conversation memory: the key they held is in no memory.
    assert not any("sk_live_" in m.content or "STRIPE_KEY" in m.content for m in rows)


async def test_boilerplate_never_becomes_memory(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, conversations = recorder(storage, clock, service)
    await rec.record(P, SESSION, first_part() + second_part() + noisy_part())
    rows = await storage.repo().list_layer(P, Layer.EPISODIC, None, newest_first=False)
    texts = [m.content for m in rows]
    entries = (await conversations.export(P, SESSION)).entries
    spoken = [e.content for e in entries if e.type is EntryType.MESSAGE]
    for text in texts + spoken:
        for noise in (
            "<command-",
            "command-stdout",
            "system-reminder",
            "IDE",
            "continued from a previous conversation",
            "Request interrupted",
            "memstrata",
            "Stop hook feedback",
            "we deploy with Fly.io",
        ):
            assert noise not in text, (noise, text)
    said_texts = [m.content for m in await said(storage)]
    assert "Why did we drop Flask for the payment webhooks?" in said_texts
    assert any(t.startswith("We dropped Flask because") for t in said_texts)
    assert "Let me check the history." not in said_texts
    assert "thanks!" not in said_texts  # an acknowledgement is no memory
    assert any("8443" in t for t in said_texts)
    port = next(m for m in await said(storage) if m.content.startswith("Which port"))
    assert port.occurred_at == datetime(2026, 11, 23, 10, 9, tzinfo=UTC)


async def test_a_transcript_read_again_or_grown_adds_no_memory_twice(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    whole = first_part() + second_part() + noisy_part()
    await rec.record(P, SESSION, first_part())
    await rec.record(P, SESSION, first_part() + second_part())
    await rec.record(P, SESSION, whole)
    once = [m.content for m in await said(storage)]
    # A new recorder state (a cursor lost, a kill between the memories and the cursor) reads
    # every line again: the same texts are the same memories.
    await storage.hook_sessions().save_transcript(P, SESSION, TranscriptCursor(), None, clock.now())
    again = await rec.record(P, SESSION, whole)
    assert again.said_added == 0
    assert [m.content for m in await said(storage)] == once
    assert len(once) == len(set(once))


async def test_a_long_answer_is_stored_in_parts(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    paragraphs = [
        f"Step {n}: " + "the migration rewrites the ledger table in place. " * 6
        for n in range(1, 9)
    ]
    line = (
        json.dumps(
            {
                "type": "assistant",
                "uuid": "z1",
                "timestamp": "2026-11-23T11:00:00Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "\n\n".join(paragraphs)}],
                },
            }
        )
        + "\n"
    )
    rec, _ = recorder(storage, clock, service)
    await rec.record(P, SESSION, [line])
    parts = await said(storage)
    assert len(parts) >= 3
    assert all(len(m.content) <= SAID_PART_CHARS for m in parts)
    assert [m.metadata["part"] for m in parts] == [
        f"{n}/{len(parts)}" for n in range(1, len(parts) + 1)
    ]
    assert "Step 1:" in parts[0].content and "Step 8:" in parts[-1].content


async def test_no_digest_for_a_session_without_substance(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    result = await rec.record(P, SESSION, first_part() + second_part())
    assert result.summary_id is None  # two prompts, two tool calls: its turns say it all
    rows = await storage.repo().list_layer(P, Layer.EPISODIC, None, newest_first=False)
    assert not any(m.metadata.get("kind") == SESSION_SUMMARY_KIND for m in rows)


async def test_the_digest_of_a_session_with_substance_is_one_memory_replaced_not_duplicated(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    first = await rec.record(P, SESSION, first_part() + second_part() + noisy_part()[:8])
    assert first.summary_id is not None  # three prompts
    grown = await rec.record(P, SESSION, first_part() + second_part() + noisy_part())
    summaries = [
        m
        for m in await storage.repo().list_layer(P, Layer.EPISODIC, SESSION, newest_first=True)
        if m.metadata.get("kind") == SESSION_SUMMARY_KIND
    ]
    assert [m.id for m in summaries] == [grown.summary_id]
    text = summaries[0].content
    assert text.startswith("Session of 2026-11-23: Stripe webhook signature fix")
    assert "Why did we drop Flask" in text and "port 8443" in text
    assert "Bash" in text and "Read" in text
    assert SESSION not in text and "user messages" not in text  # no bookkeeping
    assert summaries[0].metadata["title"] == "Stripe webhook signature fix"
    state = await storage.hook_sessions().get(P, SESSION)
    assert state is not None and state.summary_id == grown.summary_id
    assert await storage.hook_sessions().latest_summary(P, None) == grown.summary_id


async def test_a_shown_memory_counts_as_used_only_when_the_session_acts_on_it(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    used = await service.append(
        P, Layer.SEMANTIC, "config/payments.toml holds the payment retry settings", key="retries"
    )
    ignored = await service.append(P, Layer.EPISODIC, "The office plants are watered on Mondays.")
    named = await service.append(P, Layer.EPISODIC, "Release notes go out every other Friday.")
    hooks = storage.hook_sessions()
    ids = [used.memory.id, ignored.memory.id, named.memory.id]
    await hooks.add_injected(P, SESSION, ids, clock.now())
    clock.advance(days=1)
    call = (
        json.dumps(
            {
                "type": "assistant",
                "uuid": "k1",
                "timestamp": "2026-11-23T10:07:00Z",
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t9",
                            "name": "mcp__memstrata__read_memory",
                            "input": {"memory_id": named.memory.id},
                        }
                    ],
                },
            }
        )
        + "\n"
    )
    rec, _ = recorder(storage, clock, service)
    result = await rec.record(P, SESSION, first_part() + second_part() + noisy_part() + [call])
    assert result.used == 2
    repo = storage.repo()
    after = {m.id: m for i in ids if (m := await repo.get(P, i)) is not None}
    assert after[used.memory.id].access_count == used.memory.access_count + 1
    # Recorded when it was used (the answer naming the retry settings), not at recording.
    assert after[used.memory.id].last_accessed == datetime(2026, 11, 23, 10, 5, tzinfo=UTC)
    assert after[named.memory.id].access_count == named.memory.access_count + 1
    assert after[ignored.memory.id].access_count == ignored.memory.access_count
    assert after[ignored.memory.id].last_accessed == ignored.memory.last_accessed


async def test_a_real_claude_code_transcript_keeps_only_what_was_said(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    """Claude Code 2.1.332's own transcript (tests/data): hook attachments, a Stop hook's
    feedback and the model's answer to it, an interruption, /compact with its command lines,
    caveat and continuation summary, and a resume."""
    clock.set(datetime(2026, 11, 26, tzinfo=UTC))
    path = Path(__file__).parents[1] / "data" / "claude_code_transcript.jsonl"
    session = "6640bd57-0fc3-4d02-9598-e4e29f1ef4f1"
    rec, conversations = recorder(storage, clock, service)
    await rec.record(P, session, path.read_text(encoding="utf-8").splitlines(keepends=True))
    rows = await storage.repo().list_layer(P, Layer.EPISODIC, None, newest_first=False)
    assert [m.metadata["kind"] for m in rows].count(SESSION_SUMMARY_KIND) == 1  # four prompts
    rows = [m for m in rows if m.metadata["kind"] == SAID_KIND]
    assert [(m.author, m.content) for m in rows] == [
        ("user", "Which web framework do our payment webhooks run on now? List the repo too."),
        ("assistant", "The repository holds README.md; the payment webhooks run on FastAPI."),
        ("user", "Also check the deploy target."),
        ("user", "Never mind. Which database do we use in production?"),
        # Not joined with "Nothing new to store.", the answer to the Stop hook's feedback.
        ("assistant", "PostgreSQL 16 is the production database."),
        ("user", "Remind me: what did we move the webhooks to?"),
        ("assistant", "We run on FastAPI since October."),
    ]
    entries = (await conversations.export(P, session)).entries
    for e in entries:
        if e.type is EntryType.MESSAGE:
            assert "memstrata" not in e.content and "<" not in e.content, e.content


async def test_a_turn_the_store_refuses_is_skipped_and_the_rest_kept(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    """A turn whose metadata breaks a limit (here a tiny one) cannot stop the recording."""
    from memory_core.config.policies import Limits

    strict = MemoryService(
        repo=service.repo,
        clock=clock,
        limits=Limits(max_metadata_bytes=120),
        tiers=service.tiers,
        ranking=service.ranking,
    )
    rec, _ = recorder(storage, clock, strict)
    long_prompt = "Which port does payments use? " + "Please answer briefly. " * 12
    line = {
        "type": "user",
        "uuid": "q1",
        "timestamp": "2026-11-23T09:00:00Z",
        "message": {"role": "user", "content": long_prompt},
    }
    answer = {
        "type": "assistant",
        "uuid": "q2",
        "timestamp": "2026-11-23T09:00:01Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "8443."}]},
    }
    lines = [json.dumps(line) + "\n", json.dumps(answer) + "\n"]
    result = await rec.record(P, SESSION, lines)
    # The answer's metadata holds its long prompt (reply_to): refused; the prompt is kept.
    assert [m.content for m in await said(storage)] == [long_prompt.strip()]
    assert result.entries_added == 2


async def test_captured_turns_are_authored_by_the_names_given_to_the_roles(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    rec, _ = recorder(storage, clock, service)
    named = TranscriptRecorder(
        conversations=rec._conversations,
        memories=service,
        hook_sessions=storage.hook_sessions(),
        clock=clock,
        authors={"user": "Priya", "assistant": "Claude"},
    )
    await named.record(P, SESSION, first_part())
    assert [(m.author, m.metadata["role"]) for m in await said(storage)] == [
        ("Priya", "user"),
        ("Claude", "assistant"),
    ]
