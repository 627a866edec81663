"""The k-tenant rule (memory_core/domain/pattern_pool.py), with near misses of both halves."""

from __future__ import annotations

import numpy as np

from memory_core.domain.pattern_pool import PoolPassage, PoolRule, holds, pool_patterns

RULE = PoolRule(min_tenants=3, similarity=0.91, word_overlap=0.8)
WANT = "Clients in healthcare typically want on-premise deployment."
WEEKS = "Retail clients expect delivery within two weeks."
DAYS = "Retail clients expect delivery within two days."


def pool(
    items: list[tuple[str, str]], vectors: list[list[float]] | None = None
) -> tuple[list[PoolPassage], np.ndarray]:
    """Passages (tenant, text); by default every vector is the same (meaning always holds)."""
    passages = [PoolPassage(id=i + 1, tenant=t, text=x) for i, (t, x) in enumerate(items)]
    raw = np.array(vectors or [[1.0, 0.0]] * len(items), dtype=np.float32)
    return passages, raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_a_sentence_held_by_k_tenants_is_published_once_with_its_holders() -> None:
    found = pool_patterns(*pool([("a", WANT), ("b", WANT), ("c", WANT)]), RULE)
    assert len(found) == 1
    assert found[0].text == WANT and found[0].passage_id == 1
    assert found[0].holders == (("a", 1), ("b", 2), ("c", 3))


def test_fewer_than_k_tenants_share_nothing_and_k_is_configurable() -> None:
    passages, vectors = pool([("a", WANT), ("b", WANT)])
    assert pool_patterns(passages, vectors, RULE) == []
    two = PoolRule(min_tenants=2, similarity=0.91, word_overlap=0.8)
    assert [p.text for p in pool_patterns(passages, vectors, two)] == [WANT]


def test_a_tenant_counts_once_however_many_documents_say_it() -> None:
    found = pool_patterns(*pool([("a", WANT), ("a", WANT), ("b", WANT)]), RULE)
    assert found == []


def test_a_paraphrase_holds_the_pattern_but_words_fewer_than_k_wrote_never_leave() -> None:
    # "Healthcare clients want an on-premise deployment" holds WANT by meaning and words,
    # but "typically" is written by one tenant only, so WANT itself is not shared; the
    # paraphrase, whose every word the three tenants wrote, is.
    para = "Healthcare clients want an on-premise deployment."
    found = pool_patterns(*pool([("a", WANT), ("b", para), ("c", para)]), RULE)
    assert [p.text for p in found] == [para]


def test_a_near_miss_in_one_word_is_not_counted_for_that_word() -> None:
    # Cosine and word overlap both pass for weeks/days (0.968 with MiniLM), but "weeks" is
    # written by two tenants and "days" by one: at k = 3 neither may leave.
    assert pool_patterns(*pool([("a", WEEKS), ("b", WEEKS), ("c", DAYS)]), RULE) == []
    found = pool_patterns(*pool([("a", WEEKS), ("b", WEEKS), ("c", DAYS), ("d", WEEKS)]), RULE)
    assert [p.text for p in found] == [WEEKS]
    assert {t for t, _ in found[0].holders} == {"a", "b", "c", "d"}


def test_a_near_miss_by_meaning_does_not_hold_the_pattern() -> None:
    far = [[1.0, 0.0], [1.0, 0.0], [0.9, 0.45]]  # the third at cosine 0.89 < 0.91
    assert pool_patterns(*pool([("a", WANT), ("b", WANT), ("c", WANT)], far), RULE) == []


def test_a_near_miss_by_words_does_not_hold_the_pattern() -> None:
    # Same meaning by the vectors, but another object and industry: word overlap < 0.8.
    other = "Clients in retail typically want cloud deployment."
    assert not holds(WANT, other, 0.99, RULE)
    assert pool_patterns(*pool([("a", WANT), ("b", WANT), ("c", other)]), RULE) == []
    # A long passage that contains the pattern among much else does not hold it either.
    long = WANT + " They also ask for training, invoices, discounts and weekly reports."
    assert not holds(WANT, long, 0.99, RULE)


def test_one_pattern_is_published_once_even_when_a_tenant_writes_it_twice() -> None:
    items = [("a", WANT), ("a", WANT.replace("typically", "usually")), ("b", WANT), ("c", WANT)]
    found = pool_patterns(*pool(items), RULE)
    assert [p.text for p in found] == [WANT]


def test_two_different_patterns_are_both_published() -> None:
    items = [(t, WANT) for t in "abc"] + [(t, WEEKS) for t in "bcd"]
    vectors = [[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3
    found = pool_patterns(*pool(items, vectors), RULE)
    assert sorted(p.text for p in found) == sorted([WANT, WEEKS])


def test_an_empty_pool_publishes_nothing() -> None:
    assert pool_patterns([], np.zeros((0, 2), dtype=np.float32), RULE) == []
