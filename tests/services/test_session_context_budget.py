"""get_session_context keeps its token_budget on every path, Q&A sessions included (N2).

The reported case: a question-and-answer session read with a budget of 200 returned 2,979
tokens, because exchanges, the Q&A summary, the summaries' labels and the section headings
were never paid for. Built here through the service's own writes (entries, a compression,
exchanges folded into the Q&A summary, cached results), on both backends; the property over
every shape of session is tests/unit/test_condense.py's.
"""

from __future__ import annotations

import pytest

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.tokens import count_tokens
from memory_core.errors import InvalidInputError
from memory_core.services.conversations import ConversationService
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock

P = "proj"


async def _session(storage: StorageUnderTest, clock: FrozenClock) -> ConversationService:
    svc = ConversationService(
        store=storage.conversations(),
        clock=clock,
        policy=ConversationPolicy.model_validate({"max_active_exchanges": 3}),
    )
    await svc.start(P, "s")
    for i in range(8):
        clock.advance(minutes=1)
        await svc.add_entry(
            P, "s", type=EntryType.MESSAGE, content=f"entry {i} " + "detail " * 60, role=Role.USER
        )
    await svc.compress(P, "s", "fallback")
    for i in range(7):  # four fold into the Q&A summary, three stay active
        clock.advance(minutes=1)
        await svc.finalize_exchange(
            P, "s", f"question {i}: " + "why " * 50, f"answer {i}: " + "because " * 150
        )
    await svc.cache_put(P, "s", "weather", {"city": "Paris"}, {"sky": "clear " * 200}, 3)
    return svc


async def test_a_question_and_answer_session_keeps_every_budget(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = await _session(storage, clock)
    whole = await svc.context(P, "s")
    assert whole.tokens > 1_000 and whole.exchanges and whole.summaries
    for budget in (1, 10, 21, 22, 30, 60, 200, 500, 1_000, 2_000, whole.tokens - 1):
        got = await svc.context(P, "s", token_budget=budget)
        assert got.tokens <= budget, budget
        assert got.tokens == count_tokens(got.text)
        assert len(got.exchanges) + got.omitted_exchanges == len(whole.exchanges)
        assert len(got.entries) + got.omitted_entries == len(whole.entries)
        assert got.cached_results + got.omitted_cached_results == whole.cached_results
    # Enough for the newest exchange: it comes first, before the older summaries.
    newest = (await svc.context(P, "s", token_budget=400)).exchanges
    assert [x.id for x in newest] == [whole.exchanges[-1].id]
    generous = await svc.context(P, "s", token_budget=whole.tokens + 100)
    assert generous.text == whole.text


async def test_below_the_empty_layout_the_answer_is_empty_not_an_error(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    svc = await _session(storage, clock)
    tiny = await svc.context(P, "s", token_budget=5)
    assert tiny.text == "" and tiny.tokens == 0
    assert tiny.exchanges == [] and tiny.omitted_exchanges == 3
    assert tiny.summaries == [] and tiny.omitted_summaries == 1


@pytest.mark.parametrize("budget", [0, -1])
async def test_a_budget_below_one_is_refused_by_name(
    storage: StorageUnderTest, clock: FrozenClock, budget: int
) -> None:
    svc = await _session(storage, clock)
    with pytest.raises(InvalidInputError) as info:
        await svc.context(P, "s", token_budget=budget)
    assert info.value.field == "token_budget"
