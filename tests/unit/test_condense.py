"""The pure rules of conversation memory: thresholds, eligibility, shortening, layout."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.condense import (
    cache_key,
    compress_qa_summary,
    compression_reason,
    condensed_transcript,
    fallback_summary,
    fit_context,
    plan_compression,
    render_context,
    render_transcript,
    shorten_bytes,
    transcript_pages,
)
from memory_core.domain.conversation import Entry, EntryType, Exchange, Role, Summary
from memory_core.domain.tokens import count_tokens
from tests.fakes import START


def entry(n: int, content: str = "hello", **kw: object) -> Entry:
    fields: dict[str, object] = {
        "id": n,
        "type": EntryType.MESSAGE,
        "role": Role.USER,
        "content": content,
        "timestamp": START + timedelta(minutes=n),
        "token_count": 10,
    }
    fields.update(kw)
    return Entry.model_validate(fields)


def summary(n: int, text: str, entry_ids: tuple[int, ...]) -> Summary:
    return Summary(
        id=n,
        text=text,
        entry_ids=entry_ids,
        token_count=4,
        original_tokens=30,
        ratio=0.13,
        covers_from=START,
        covers_until=START + timedelta(minutes=3),
        source="fallback",
        created_at=START,
    )


def test_thresholds_trigger_only_when_strictly_over() -> None:
    policy = ConversationPolicy(compress_token_threshold=100, compress_entry_limit=5)
    assert compression_reason(100, 5, policy) is None
    assert compression_reason(101, 5, policy) == "active tokens 101 > 100"
    assert compression_reason(100, 6, policy) == "active entries 6 > 5"


def test_eligible_entries_are_outside_the_recent_window_and_need_a_minimum() -> None:
    policy = ConversationPolicy(recent_window=10, min_compress_entries=5)
    assert plan_compression([entry(i) for i in range(1, 15)], policy, "r") is None  # 4 eligible
    plan = plan_compression([entry(i) for i in range(15, 0, -1)], policy, "r")
    assert plan is not None
    assert [e.id for e in plan.entries] == [1, 2, 3, 4, 5]  # oldest first, newest 10 kept
    assert plan.original_tokens == 50


def test_a_zero_recent_window_makes_everything_eligible() -> None:
    policy = ConversationPolicy(recent_window=0, min_compress_entries=1)
    plan = plan_compression([entry(1), entry(2)], policy, "r")
    assert plan is not None and len(plan.entries) == 2


def test_shorten_prefers_sentences_then_words_and_keeps_utf8_whole() -> None:
    text = "First sentence here. " * 40
    short = shorten_bytes(text, 500)
    assert len(short.encode()) <= 500
    assert short.endswith(("here. …", "here." + " …"))
    assert shorten_bytes("fits", 10) == "fits"
    emoji = "🙂" * 300
    cut = shorten_bytes(emoji, 101)
    assert len(cut.encode()) <= 101 and cut.rstrip(" …") == "🙂" * len(cut.rstrip(" …"))


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=8, max_value=2000))
def test_shorten_never_exceeds_the_budget(text: str, budget: int) -> None:
    out = shorten_bytes(text, budget)
    assert len(out.encode("utf-8", errors="surrogatepass")) <= max(
        budget, len(text.encode("utf-8", errors="surrogatepass"))
    )
    if len(text.encode("utf-8", errors="surrogatepass")) > budget:
        assert len(out.encode("utf-8", errors="surrogatepass")) <= budget


def test_cache_key_ignores_parameter_order_but_not_values_or_tool() -> None:
    a = cache_key("grep", {"pattern": "x", "path": "/src"})
    assert a == cache_key("grep", {"path": "/src", "pattern": "x"})
    assert a != cache_key("grep", {"path": "/src", "pattern": "y"})
    assert a != cache_key("find", {"path": "/src", "pattern": "x"})


def test_fallback_summary_has_the_documented_shape() -> None:
    entries = [
        entry(1, "How do I deploy?"),
        entry(
            2,
            "",
            type=EntryType.TOOL_CALL,
            role=Role.ASSISTANT,
            tool_name="kubectl",
            arguments={"cmd": "apply"},
        ),
        entry(
            3,
            "boom",
            type=EntryType.TOOL_RESULT,
            role=Role.SYSTEM,
            tool_name="kubectl",
            is_error=True,
        ),
        entry(4, "Use helm instead", role=Role.ASSISTANT),
        entry(5, "Thanks, that worked"),
    ]
    text = fallback_summary(entries, 1000)
    assert text.startswith(
        '2 user messages, first: "How do I deploy?", last: "Thanks, that worked"'
    )
    assert "tools used: kubectl" in text and "1 errors" in text
    assert len(fallback_summary(entries * 50, 200).encode()) <= 200


def test_qa_summary_compression_keeps_every_line_while_it_can() -> None:
    lines = [f"- Q: question {i} about topic{i} A: " + "detail " * 20 for i in range(40)]
    text = "\n".join(lines)
    assert len(text.encode()) > 4096
    out = compress_qa_summary(text, 3072)
    assert len(out.encode()) <= 3072
    assert "topic0" in out and "topic39" in out


def test_context_layout_puts_summaries_before_the_recent_conversation() -> None:
    s = summary(1, "We set up CI.", entry_ids=(1, 2, 3))
    x = Exchange(
        id=1,
        question="Q?",
        answer="A.",
        answer_shortened=False,
        timestamp=START + timedelta(minutes=9),
        folded=False,
    )
    text = render_context([s], "- Q: old A: older", (START, START), [entry(4, "latest")], [x])
    assert text.index("=== Previous Conversation Summaries ===") < text.index("We set up CI.")
    assert text.index("We set up CI.") < text.index("=== Recent Conversation ===")
    assert "2026-01-15 12:00 to 2026-01-15 12:03" in text
    assert text.index("latest") < text.index("Q: Q?")  # chronological


def test_budget_keeps_newest_summaries_then_newest_entries() -> None:
    entries = [entry(i, "word " * 20) for i in range(1, 11)]
    fitted = fit_context([], "", None, entries, [], [], 100)
    assert fitted.omitted_summaries == 0 and fitted.omitted_entries > 0
    kept_e = fitted.entries
    assert kept_e[-1].id == 10
    assert [e.id for e in kept_e] == sorted(e.id for e in kept_e)
    assert count_tokens(fitted.text) <= 100
    assert fit_context([], "", None, entries, [], [], None).omitted_entries == 0


def test_a_shrunk_qa_line_keeps_the_start_of_its_answer() -> None:
    line = "- Q: " + "why is the build slow " * 6 + "A: " + "because the cache is cold " * 6
    out = compress_qa_summary("\n".join([line] * 30), 2_000)
    assert len(out.encode()) <= 2_000
    for kept in out.splitlines():
        assert kept.startswith("- Q: why is the build") and " A: because the cache" in kept


def test_a_condensed_transcript_respects_both_caps_and_pages_hold_everything() -> None:
    entries = [entry(i, f"E{i}-START " + "word " * 1_000 + f"E{i}-END") for i in range(1, 6)]
    text, cut = condensed_transcript(entries, entry_bytes=1_000, total_bytes=3_000)
    assert len(text.encode()) <= 3_000 and cut == (1, 2, 3, 4, 5)
    assert all(f"E{i}-START" in text for i in range(1, 6)) and "E1-END" not in text
    pages = transcript_pages(entries, 2_000)
    assert all(len(p.encode()) <= 2_000 for p in pages)
    assert "".join(pages).replace("\n", "") == "".join(
        render_transcript(entries).splitlines()
    ).replace("\n", "")
    few = [entry(1, "short")]
    assert condensed_transcript(few, entry_bytes=1_000, total_bytes=3_000)[1] == ()
    assert transcript_pages(few, 2_000) == [render_transcript(few)]


# --- every budget is kept, Q&A sessions included (issue 35, N2) -------------------------------

_TEXT = st.text(max_size=400)  # any text but surrogates


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, Any]:
    """A session's parts of any shape: summaries, a Q&A summary, entries, exchanges, cache."""
    n_entries = draw(st.integers(0, 12))
    kinds = [EntryType.MESSAGE, EntryType.TOOL_CALL, EntryType.TOOL_RESULT, EntryType.CONTEXT]
    entries = [
        entry(
            i,
            draw(_TEXT),
            type=draw(st.sampled_from(kinds)),
            tool_name=draw(st.sampled_from([None, "grep"])),
            timestamp=START + timedelta(minutes=draw(st.integers(0, 30))),
        )
        for i in range(1, n_entries + 1)
    ]
    summaries = [
        summary(i, draw(_TEXT), entry_ids=(i * 10, i * 10 + 3))
        for i in range(1, draw(st.integers(0, 4)) + 1)
    ]
    exchanges = [
        Exchange(
            id=i,
            question=draw(_TEXT),
            answer=draw(_TEXT),
            answer_shortened=False,
            timestamp=START + timedelta(minutes=draw(st.integers(0, 30))),
            folded=False,
        )
        for i in range(1, draw(st.integers(0, 8)) + 1)
    ]
    qa = "\n".join(
        f"- Q: {q} A: {a}" for q, a in draw(st.lists(st.tuples(_TEXT, _TEXT), max_size=6))
    )
    return {
        "summaries": summaries,
        "qa_summary": qa,
        "qa_span": draw(st.sampled_from([None, (START, START + timedelta(hours=1))])),
        "entries": entries,
        "exchanges": exchanges,
        "cached": draw(st.lists(_TEXT, max_size=3)),
    }


@settings(deadline=None, max_examples=150)
@given(sessions(), st.integers(min_value=1, max_value=3_000))
def test_the_context_never_exceeds_its_budget(session: dict[str, Any], budget: int) -> None:
    fitted = fit_context(token_budget=budget, **session)
    assert count_tokens(fitted.text) <= budget
    everything = fit_context(token_budget=None, **session)
    # What is shown and what is counted as left out add up to the whole session.
    assert len(fitted.entries) + fitted.omitted_entries == len(everything.entries)
    assert len(fitted.exchanges) + fitted.omitted_exchanges == len(everything.exchanges)
    assert len(fitted.summaries) + fitted.omitted_summaries == len(everything.summaries)
    assert len(fitted.cached) + fitted.omitted_cached == len(everything.cached)
    qa_lines = [line for line in str(session["qa_summary"]).split("\n") if line.strip()]
    kept_qa = [line for line in fitted.qa_summary.split("\n") if line.strip()]
    assert len(kept_qa) + fitted.omitted_qa_lines == len(qa_lines)
    # Each block is counted on its own, rounded up, with its newline: at most ~1.5 tokens over.
    blocks = len(qa_lines) + sum(
        len(everything_part)
        for everything_part in (
            everything.entries,
            everything.exchanges,
            everything.summaries,
            everything.cached,
        )
    )
    if count_tokens(everything.text) + 2 * blocks + 6 <= budget:
        # A budget that holds the whole layout (with room for that rounding) cuts nothing.
        assert fitted.text == everything.text


def test_below_the_empty_layout_the_text_is_empty_and_everything_omitted() -> None:
    x = Exchange(
        id=1, question="Q?", answer="A.", answer_shortened=False, timestamp=START, folded=False
    )
    empty = render_context([], "", None, [], [])
    smallest = count_tokens(empty) + 1  # the layout and its joining newline
    tight = fit_context([], "", None, [entry(1)], [x], [], smallest - 1)
    assert tight.text == "" and tight.omitted_entries == 1 and tight.omitted_exchanges == 1
    fits = fit_context([], "", None, [], [], [], smallest)
    assert fits.text == empty


def test_a_question_and_answer_session_keeps_its_budget() -> None:
    # The reported case: a budget of 200 returned 2,979 tokens (exchanges were never counted).
    exchanges = [
        Exchange(
            id=i,
            question=f"question {i} " + "why " * 40,
            answer=f"answer {i} " + "because " * 200,
            answer_shortened=False,
            timestamp=START + timedelta(minutes=i),
            folded=False,
        )
        for i in range(1, 9)
    ]
    qa = "\n".join(f"- Q: old {i} A: " + "older " * 30 for i in range(20))
    fitted = fit_context([], qa, (START, START), [], exchanges, [], 200)
    assert count_tokens(fitted.text) <= 200
    assert fitted.omitted_exchanges + len(fitted.exchanges) == 8
    assert fit_context([], qa, (START, START), [], exchanges, [], 800).exchanges  # the newest
    assert count_tokens(fit_context([], qa, None, [], exchanges, [], None).text) > 2_000
