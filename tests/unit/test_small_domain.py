from datetime import UTC, datetime, timedelta

from memory_core.domain.compaction import summarize_entries
from memory_core.domain.health import assess_health
from memory_core.domain.models import Layer, Memory, StoreStats, Tier
from memory_core.domain.rules import condition_phrase, rule_applies
from memory_core.domain.tokens import count_tokens
from tests.fakes import make_memory

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(mid: int, text: str) -> Memory:
    return make_memory(mid, T0 + timedelta(minutes=mid), content=text, layer=Layer.WORKING)


def test_summary_lists_entries_oldest_first_and_fits_the_limit() -> None:
    text = summarize_entries([entry(2, "second"), entry(1, "first  line\nwrapped")], max_chars=500)
    assert text.splitlines()[0] == "[Summary of 2 entries]"
    assert text.index("first line wrapped") < text.index("second")
    assert len(summarize_entries([entry(i, "x" * 300) for i in range(50)], max_chars=200)) == 200


def test_rule_applies_when_most_condition_words_are_present() -> None:
    assert rule_applies("deploying to production", "deploy the api to production")
    assert not rule_applies("deploying to production", "user.name")
    assert rule_applies("changing the coupons API", "can I change its public API?")
    assert rule_applies("before you merge", "merging the branch now")
    assert rule_applies("?", "?")


def test_count_tokens_is_about_four_chars_each() -> None:
    assert count_tokens("") == 0
    assert count_tokens("x") == 1
    assert count_tokens("x" * 40) == 10
    assert count_tokens("x" * 41) == 11  # rounded up: a budget is never overspent by a part


def stats(**tiers: int) -> StoreStats:
    by_tier = {t: tiers.get(t.value, 0) for t in Tier}
    return StoreStats(
        project="p",
        total=sum(by_tier.values()),
        by_tier=by_tier,
        by_layer=dict.fromkeys(Layer, 0),
        content_bytes=0,
        database_bytes=0,
        oldest=None,
        newest=None,
        stale_tiers=tiers.get("stale", 0),
        never_accessed=0,
    )


def test_health_suggests_pruning_and_flags_inactivity() -> None:
    assert [n.code for n in assess_health(stats())] == ["empty"]
    assert [n.code for n in assess_health(stats(ACTIVE=3))] == []
    codes = [n.code for n in assess_health(stats(ARCHIVED=1, EXPIRED=4, stale=2))]
    assert codes == ["prune_suggested", "inactive", "stale_tiers"]


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memory_core.domain.budget import TokenAllowance  # noqa: E402


@given(st.lists(st.integers(1, 50), max_size=30), st.one_of(st.none(), st.integers(1, 300)))
def test_budget_keeps_the_longest_fitting_prefix(sizes: list[int], budget: int | None) -> None:
    texts = ["x" * 4 * n for n in sizes]  # n tokens each
    kept, omitted = TokenAllowance(budget).prefix(texts, lambda t: t)
    assert kept == texts[: len(kept)] and omitted == len(texts) - len(kept)
    if budget is not None:
        assert sum(map(count_tokens, kept)) <= budget
        if omitted:
            assert sum(sizes[: len(kept) + 1]) > budget


def test_a_budget_skips_what_does_not_fit_and_counts_it() -> None:
    budget = TokenAllowance(5, per_item=1)
    assert budget.take("x" * 12)  # 3 + 1
    assert not budget.take("x" * 8)  # 2 + 1 > 1 left
    assert budget.take("")  # 0 + 1
    assert budget.left == 0 and budget.omitted == 1
    assert TokenAllowance(None).take("x" * 10_000)


def test_a_condition_reads_once_when() -> None:
    assert condition_phrase("deploying") == "when deploying"
    assert condition_phrase("before committing") == "before committing"
    assert condition_phrase("When the build breaks") == "When the build breaks"
