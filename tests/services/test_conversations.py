"""ConversationService on SQLite and PostgreSQL: triggers, boundaries, linkage, Q&A, cache.

Every test runs once per backend (the `storage` fixture), so a behaviour difference fails.
"""

from __future__ import annotations

import pytest
import structlog

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import EntryType, Role
from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from memory_core.errors import (
    ConfirmationRequiredError,
    ConflictError,
    InvalidInputError,
    SessionNotFoundError,
    SummarizerError,
)
from memory_core.services.conversations import ConversationService
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock

P = "proj"


class FixedSummarizer:
    name = "fixed"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str, int]] = []

    async def summarize(self, instructions: str, transcript: str, max_tokens: int) -> str:
        self.calls.append((instructions, transcript, max_tokens))
        if self.fail:
            raise SummarizerError("down")
        return "model summary"


def make(
    storage: StorageUnderTest,
    clock: FrozenClock,
    summarizer: FixedSummarizer | None = None,
    **policy: int,
) -> ConversationService:
    return ConversationService(
        store=storage.conversations(),
        clock=clock,
        policy=ConversationPolicy.model_validate(policy),
        summarizer=summarizer,
    )


async def say(svc: ConversationService, sid: str, text: str, role: Role = Role.USER) -> None:
    await svc.add_entry(P, sid, type=EntryType.MESSAGE, content=text, role=role)


async def test_entry_limit_triggers_exactly_one_over(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, compress_entry_limit=15, recent_window=10, min_compress_entries=5)
    await svc.start(P, "s")
    for i in range(15):
        clock.advance(minutes=1)
        added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content=f"m{i}", role=Role.USER)
        assert added.compression is None  # at the limit: no trigger
    added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content="m15", role=Role.USER)
    c = added.compression
    # No summarizer configured: the client's model is asked first (the grace test goes on).
    assert c is not None and c.status == "summary_requested" and c.request is not None
    assert c.request.entry_ids == (1, 2, 3, 4, 5, 6)  # 16 active, newest 10 kept


async def test_token_threshold_triggers_exactly_one_over(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(
        storage,
        clock,
        FixedSummarizer(),
        compress_token_threshold=40,
        recent_window=1,
        min_compress_entries=1,
    )
    await svc.start(P, "s")
    await say(svc, "s", "x" * 80)  # 20 tokens
    added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content="y" * 80, role=Role.USER)
    assert added.compression is None  # exactly 40
    added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content="z", role=Role.USER)
    assert added.compression is not None and added.compression.status == "compressed"
    stats = await svc.stats(P, "s")
    assert stats.compressed_entries == 2 and stats.active_entries == 1 and stats.summaries == 1


async def test_too_few_eligible_entries_do_not_compress(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, recent_window=10, min_compress_entries=5)
    await svc.start(P, "s")
    for i in range(14):
        await say(svc, "s", f"m{i}")
    result = await svc.compress(P, "s", "fallback")
    assert result.status == "too_few_entries"
    await say(svc, "s", "m14")
    result = await svc.compress(P, "s", "fallback")
    assert result.status == "compressed" and result.summary is not None
    assert result.summary.entry_ids == (1, 2, 3, 4, 5)
    # The compression history the dashboard shows: the summaries, oldest first.
    assert await svc.summaries(P, "s") == [result.summary]
    with pytest.raises(SessionNotFoundError):
        await svc.summaries(P, "other")


async def test_summary_links_entries_and_records_its_numbers(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    summarizer = FixedSummarizer()
    svc = make(storage, clock, summarizer, recent_window=2, min_compress_entries=2)
    await svc.start(P, "s")
    for i in range(6):
        clock.advance(minutes=5)
        await say(svc, "s", f"message number {i} " * 10)
    result = await svc.compress(P, "s")
    s = result.summary
    assert s is not None and s.source == "summarizer" and s.text == "model summary"
    assert s.entry_ids == (1, 2, 3, 4)
    assert s.original_tokens == sum(e.token_count for e in (await svc.export(P, "s")).entries[:4])
    assert s.ratio == round(s.token_count / s.original_tokens, 4)
    assert s.covers_from < s.covers_until
    instructions, transcript, max_tokens = summarizer.calls[0]
    assert "decisions" in instructions and "#1" in transcript and "#5" not in transcript
    assert max_tokens == round(s.original_tokens * 0.3 + 0.49999)
    exported = await svc.export(P, "s")
    for e in exported.entries:
        assert e.compressed == (e.id <= 4)
        assert e.summary_id == (s.id if e.id <= 4 else None)


async def test_summarizer_failure_falls_back(storage: StorageUnderTest, clock: FrozenClock) -> None:
    svc = make(storage, clock, FixedSummarizer(fail=True), recent_window=0, min_compress_entries=1)
    await svc.start(P, "s")
    await say(svc, "s", "hello there")
    result = await svc.compress(P, "s")
    assert result.summary is not None and result.summary.source == "fallback"
    await say(svc, "s", "again")
    with pytest.raises(SummarizerError):
        await svc.compress(P, "s", "summarizer")


async def test_client_summary_flow_and_grace(storage: StorageUnderTest, clock: FrozenClock) -> None:
    svc = make(
        storage,
        clock,
        recent_window=2,
        min_compress_entries=2,
        compress_entry_limit=5,
        client_summary_grace=2,
    )
    await svc.start(P, "s")
    with pytest.raises(ConflictError):
        await svc.submit_summary(P, "s", "nothing was asked")
    for i in range(5):
        await say(svc, "s", f"m{i}")
    asked = await svc.compress(P, "s", "client")
    assert asked.status == "summary_requested" and asked.request is not None
    assert asked.request.entry_ids == (1, 2, 3)
    assert "m0" in asked.request.transcript and "decisions" in asked.request.instructions
    done = await svc.submit_summary(P, "s", "The user counted from m0 to m2.")
    assert done.summary is not None and done.summary.source == "client"
    assert done.summary.entry_ids == (1, 2, 3)
    # Automatic trigger without a summarizer asks the client, then reminds, then falls back.
    n = 5
    while True:
        added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content=f"m{n}", role=Role.USER)
        n += 1
        if added.compression is not None:
            break
    assert added.compression.status == "summary_requested"
    first = added.compression.request
    assert first is not None and first.entry_ids == (4, 5, 6, 7)
    for left in (2, 1):  # client_summary_grace entries: reminded, without the transcript
        added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content=f"m{n}", role=Role.USER)
        n += 1
        assert added.compression is not None and added.compression.status == "summary_pending"
        assert added.compression.request is None
        assert added.compression.reason.startswith("a summary of entries #4-#7 (4) is still due")
        assert f"after {left} more entries the server writes a fallback" in added.compression.reason
    page = await svc.read_request(P, "s")  # the request can still be read
    assert page.entry_ids == first.entry_ids and page.pages == 1 and "m3" in page.transcript
    added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content=f"m{n}", role=Role.USER)
    assert added.compression is not None and added.compression.status == "compressed"
    assert added.compression.summary is not None
    assert added.compression.summary.source == "fallback"
    assert added.compression.summary.entry_ids == first.entry_ids
    with pytest.raises(ConflictError):  # the request was settled by the fallback
        await svc.submit_summary(P, "s", "too late")


async def test_entry_validation_names_the_field_and_writes_nothing(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    bad: list[tuple[str, dict[str, object]]] = [
        ("role", {"type": EntryType.MESSAGE, "content": "hi"}),
        ("content", {"type": EntryType.MESSAGE, "content": "  ", "role": Role.USER}),
        ("tool_name", {"type": EntryType.TOOL_CALL, "content": ""}),
        (
            "arguments",
            {"type": EntryType.MESSAGE, "content": "x", "role": Role.USER, "arguments": {"a": 1}},
        ),
        (
            "source",
            {"type": EntryType.MESSAGE, "content": "x", "role": Role.USER, "source": "/etc"},
        ),
        ("is_error", {"type": EntryType.CONTEXT, "content": "x", "is_error": True}),
        ("content", {"type": EntryType.CONTEXT, "content": "a\x00b"}),
    ]
    for field, kwargs in bad:
        with pytest.raises(InvalidInputError) as info:
            await svc.add_entry(P, "s", **kwargs)  # type: ignore[arg-type]
        assert info.value.field == field
    with pytest.raises(SessionNotFoundError):
        await svc.add_entry(P, "nope", type=EntryType.MESSAGE, content="x", role=Role.USER)
    assert (await svc.stats(P, "s")).total_entries == 0


async def test_entry_kinds_are_recorded_with_their_fields(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    call = await svc.add_entry(
        P,
        "s",
        type=EntryType.TOOL_CALL,
        content="",
        tool_name="grep",
        arguments={"pattern": "TODO"},
    )
    result = await svc.add_entry(
        P, "s", type=EntryType.TOOL_RESULT, content="3 matches", tool_name="grep"
    )
    ctx = await svc.add_entry(
        P, "s", type=EntryType.CONTEXT, content="def main(): ...", source="src/app.py"
    )
    assert call.entry.role is Role.ASSISTANT and call.entry.token_count > 0
    assert result.entry.role is Role.SYSTEM and ctx.entry.source == "src/app.py"
    text = (await svc.context(P, "s")).text
    assert 'called grep({"pattern":"TODO"})' in text
    assert "tool result of grep: 3 matches" in text
    assert "added context from src/app.py" in text


async def test_context_budget_keeps_the_newest(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    for i in range(20):
        clock.advance(minutes=1)
        await say(svc, "s", f"entry {i} " + "filler " * 20)
    full = await svc.context(P, "s")
    cut = await svc.context(P, "s", token_budget=200)
    assert full.omitted_entries == 0 and cut.omitted_entries > 0
    assert "entry 19" in cut.text and "entry 0 " not in cut.text
    assert cut.tokens < full.tokens


async def test_exchanges_fold_after_ten_and_long_answers_shorten(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    for i in range(10):
        done = await svc.finalize_exchange(P, "s", f"question {i}?", f"answer {i}.")
        assert done.outcome.folded == ()
    done = await svc.finalize_exchange(P, "s", "question 10?", "answer 10.")
    assert [x.id for x in done.outcome.folded] == [1]
    assert "question 0?" in done.outcome.qa_summary
    stats = await svc.stats(P, "s")
    assert stats.exchanges == 11 and stats.active_exchanges == 10
    long_answer = "This is a sentence of the answer. " * 30  # 1020 bytes
    done = await svc.finalize_exchange(P, "s", "long?", long_answer)
    stored = done.outcome.exchange
    assert stored.answer_shortened and 400 <= len(stored.answer.encode()) <= 500
    exactly = "a" * 750
    done = await svc.finalize_exchange(P, "s", "edge?", exactly)
    assert not done.outcome.exchange.answer_shortened  # 750 is not over 750
    context = (await svc.context(P, "s")).text
    assert "[Earlier questions and answers" in context and "question 0?" in context


async def test_qa_summary_is_compressed_above_4kb(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, max_active_exchanges=1)
    await svc.start(P, "s")
    compressed = False
    for i in range(40):
        done = await svc.finalize_exchange(
            P, "s", f"question {i} about subject{i}? " + "context " * 8, "answer " * 40
        )
        size = len(done.outcome.qa_summary.encode())
        assert size <= 4096
        compressed = compressed or done.qa_summary_compressed
    assert compressed
    info = await svc.export(P, "s")
    assert len(info.qa_summary.encode()) <= 4096 and "subject0" in info.qa_summary


async def test_cache_expires_after_its_duration_and_hits_renew(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    await svc.cache_put(P, "s", "weather", {"city": "Paris", "unit": "C"}, {"t": 21}, 3)
    await svc.cache_put(P, "s", "search", '{"q": "x"}', "result text", 1)
    hit = await svc.cache_lookup(P, "s", "weather", {"unit": "C", "city": "Paris"})
    assert hit is not None and hit.result == {"t": 21}
    assert await svc.cache_lookup(P, "s", "weather", {"city": "Rome", "unit": "C"}) is None
    done = await svc.finalize_exchange(P, "s", "q1", "a1")
    assert [c.tool_name for c in done.outcome.expired] == ["search"]
    assert [c.describe() for c in done.cache] == [
        'weather({"city":"Paris","unit":"C"}): 2/3 exchanges remaining'
    ]
    await svc.finalize_exchange(P, "s", "q2", "a2")  # 1 left
    assert await svc.cache_lookup(P, "s", "weather", {"city": "Paris", "unit": "C"})  # back to 3
    for i in range(2):
        await svc.finalize_exchange(P, "s", f"q{i}", "a")
    assert await svc.cache_lookup(P, "s", "weather", {"city": "Paris", "unit": "C"})
    for i in range(3):
        await svc.finalize_exchange(P, "s", f"r{i}", "a")
    assert await svc.cache_lookup(P, "s", "weather", {"city": "Paris", "unit": "C"}) is None
    for bad_duration in (0, -1):
        with pytest.raises(InvalidInputError) as info:
            await svc.cache_put(P, "s", "t", {}, 1, bad_duration)
        assert info.value.field == "duration"
    with pytest.raises(InvalidInputError) as info:
        await svc.cache_put(P, "s", "t", "{not json", 1, 1)
    assert info.value.field == "parameters"
    assert len((await svc.stats(P, "s")).cache) == 0


async def test_export_import_round_trip_is_lossless(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, recent_window=2, min_compress_entries=2)
    await svc.start(P, "s")
    for i in range(6):
        clock.advance(minutes=1)
        await say(svc, "s", f"m{i} ünïcødé 🙂")
    await svc.add_entry(
        P,
        "s",
        type=EntryType.TOOL_CALL,
        content="",
        tool_name="t",
        arguments={"nested": {"list": [1, 2.5, None, True]}},
    )
    await svc.compress(P, "s", "fallback")
    for i in range(12):
        await svc.finalize_exchange(P, "s", f"q{i}", f"a{i}")
    await svc.cache_put(P, "s", "tool", {"a": 1}, {"r": [1]}, 4)
    await svc.update_config(P, "s", {"recent_window": 3})
    before = await svc.export(P, "s")
    await svc.import_(P, before.model_dump(mode="json"), session_id="copy")
    copy = await svc.export(P, "copy")
    assert copy.model_dump(exclude={"session_id"}) == before.model_dump(exclude={"session_id"})
    with pytest.raises(ConflictError):
        await svc.import_(P, before.model_dump(mode="json"))
    broken = before.model_dump(mode="json")
    broken["entries"][0]["summary_id"] = 99
    with pytest.raises(InvalidInputError) as info:
        await svc.import_(P, broken, session_id="broken")
    assert info.value.field.startswith("data.entries")
    with pytest.raises(SessionNotFoundError):
        await svc.export(P, "broken")


async def test_config_is_per_session_and_validated(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "a")
    await svc.start(P, "b")
    policy = await svc.update_config(P, "a", {"compress_entry_limit": 3, "recent_window": 1})
    assert policy.compress_entry_limit == 3
    assert (await svc.policy(P, "b")).compress_entry_limit == 100
    with pytest.raises(InvalidInputError) as info:
        await svc.update_config(P, "a", {"no_such_setting": 1})
    assert info.value.field == "changes.no_such_setting"
    with pytest.raises(InvalidInputError) as info:
        await svc.update_config(P, "a", {"recent_window": -1})
    assert "recent_window" in info.value.field
    restored = await svc.update_config(P, "a", {"compress_entry_limit": None})
    assert restored.compress_entry_limit == 100 and restored.recent_window == 1


async def test_clear_needs_confirmation_and_sessions_are_per_project(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock)
    await svc.start(P, "s")
    await say(svc, "s", "hello")
    with pytest.raises(SessionNotFoundError):
        await svc.stats("other", "s")
    with pytest.raises(ConfirmationRequiredError):
        await svc.clear(P, "s", confirm=False)
    assert await svc.clear(P, "s", confirm=True) == 1
    with pytest.raises(SessionNotFoundError):
        await svc.stats(P, "s")
    info, created = await svc.start(P, None)
    assert created and len(info.session_id) == 32
    again, created = await svc.start(P, info.session_id)
    assert not created and again.session_id == info.session_id


async def test_events_are_logged_with_tokens_saved(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, recent_window=0, min_compress_entries=1)
    with structlog.testing.capture_logs() as logs:
        await svc.start(P, "s")
        await say(svc, "s", "a fairly long message " * 20)
        await svc.compress(P, "s", "fallback")
        await svc.clear(P, "s", confirm=True)
    events = {e["event"]: e for e in logs}
    assert events["conversation.entry_added"]["tokens"] > 0
    compressed = events["conversation.compressed"]
    assert (
        compressed["tokens_saved"] == compressed["original_tokens"] - compressed["summary_tokens"]
    )
    assert compressed["tokens_saved"] > 0
    assert events["conversation.session_cleared"]["entries"] == 1


def test_the_wordpiece_instrument_counts_whole_texts() -> None:
    counter = WordPieceTokenCounter()
    assert counter.count("Hello world, this is memstrata.") == 10  # "memstrata" is 4 pieces
    assert counter.count("") == 0
    assert counter.count("word " * 1000) == 1000  # no truncation at the model's 256 tokens


async def test_credentials_are_redacted_before_storage(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    svc = make(storage, clock)
    await svc.start(P, "s")
    added = await svc.add_entry(
        P, "s", type=EntryType.TOOL_CALL, tool_name="gh", arguments={"auth": token, "n": 1}
    )
    assert added.redacted == {"github_token": 1}
    assert added.entry.arguments == {"auth": "[REDACTED:github_token]", "n": 1}
    said = await svc.add_entry(
        P, "s", type=EntryType.MESSAGE, role=Role.USER, content=f"my token is {token}"
    )
    assert said.redacted == {"github_token": 1}
    done = await svc.finalize_exchange(P, "s", "use " + token, "ok")
    assert done.redacted == {"github_token": 1}
    await svc.cache_put(P, "s", "gh", {"auth": token}, {"echo": token}, 2)
    hit = await svc.cache_lookup(P, "s", "gh", {"auth": token})
    assert hit is not None and hit.result == {"echo": "[REDACTED:github_token]"}
    assert token not in (await svc.export(P, "s")).model_dump_json()


async def test_an_import_is_checked_and_redacted_like_any_write(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    svc = make(storage, clock)
    await svc.start(P, "s")
    await say(svc, "s", "plain words")
    data = (await svc.export(P, "s")).model_dump(mode="json")
    bad_config = {**data, "config": {"bogus": 1}}
    with pytest.raises(InvalidInputError) as info:
        await svc.import_(P, bad_config, session_id="a")
    assert info.value.field.startswith("data.config")
    huge = {**data, "entries": [{**data["entries"][0], "id": 2**70}]}
    with pytest.raises(InvalidInputError):
        await svc.import_(P, huge, session_id="b")
    secret = {**data, "entries": [{**data["entries"][0], "content": f"key {token}"}]}
    await svc.import_(P, secret, session_id="c")
    assert token not in (await svc.export(P, "c")).model_dump_json()
    for sid in ("a", "b"):
        with pytest.raises(SessionNotFoundError):
            await svc.stats(P, sid)


async def test_a_failed_follow_up_compression_does_not_fail_the_entry(
    storage: StorageUnderTest, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make(storage, clock, FixedSummarizer(), compress_entry_limit=2, recent_window=0)
    await svc.start(P, "s")

    async def raced(*args: object, **kwargs: object) -> None:
        raise ConflictError("those entries were summarised meanwhile")

    monkeypatch.setattr(svc, "_auto_compress", raced)
    for i in range(3):
        added = await svc.add_entry(P, "s", type=EntryType.MESSAGE, content=f"m{i}", role=Role.USER)
        assert added.compression is None
    assert (await svc.stats(P, "s")).total_entries == 3


async def test_folded_qa_summary_keeps_the_gist_of_questions_and_answers(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = make(storage, clock, max_active_exchanges=1)
    await svc.start(P, "s")
    for i in range(40):
        await svc.finalize_exchange(
            P,
            "s",
            f"question {i}: which region should service{i} deploy to, given latency? " * 2,
            f"answer{i} is eu-west because most users are in Europe. " * 3,
        )
    qa = (await svc.export(P, "s")).qa_summary
    assert len(qa.encode()) <= 4096
    lines = qa.splitlines()
    assert len(lines) == 39  # every folded exchange keeps its line (the newest is active)
    for i, line in enumerate(lines):  # each keeps the start of its question and its answer
        assert line.startswith(f"- Q: question {i}: which region")
        assert f" A: answer{i} is eu-west" in line, line


async def test_a_long_answer_is_shortened_by_the_summarizer_when_there_is_one(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    long_answer = "The cause was a stale cache entry in the edge tier. " * 20  # 1,060 bytes
    summarizer = FixedSummarizer()
    svc = make(storage, clock, summarizer)
    await svc.start(P, "s")
    done = await svc.finalize_exchange(P, "s", "Why did checkout fail?", long_answer)
    assert done.outcome.exchange.answer == "model summary"
    assert done.outcome.exchange.answer_shortened
    instructions, sent, max_tokens = summarizer.calls[0]
    assert sent == long_answer.strip() and "Why did checkout fail?" in instructions
    assert "at most 500 bytes" in instructions and max_tokens == 125
    # A summarizer that fails, or writes too much, never breaks the bound.
    failing = make(storage, clock, FixedSummarizer(fail=True))
    await failing.start(P, "t")
    cut = await failing.finalize_exchange(P, "t", "Why?", long_answer)
    assert cut.outcome.exchange.answer.startswith("The cause was a stale cache entry")
    assert len(cut.outcome.exchange.answer.encode()) <= 500


async def test_a_wordy_summarizer_is_still_held_to_the_answer_bound(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    class Wordy(FixedSummarizer):
        async def summarize(self, instructions: str, transcript: str, max_tokens: int) -> str:
            return "word " * 400

    svc = make(storage, clock, Wordy())
    await svc.start(P, "s")
    done = await svc.finalize_exchange(P, "s", "Why?", "because " * 200)
    assert len(done.outcome.exchange.answer.encode()) <= 500
