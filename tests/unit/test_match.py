"""The absolute match bands of search hits (domain.match)."""

from __future__ import annotations

import pytest

from memory_core.config.policies import RankingPolicy
from memory_core.domain.match import Match, word_share
from memory_core.domain.ranking import match_thresholds


@pytest.mark.parametrize(
    ("query_words", "text", "share"),
    [
        (["hiking"], "We went for a hike on Sunday", 1.0),
        (["support", "group"], "the supported groups met", 1.0),
        (["vuln"], "three vulnerabilities found", 1.0),
        (["coffee", "lunch"], "The team lunch is on Friday", 0.5),
        (["weaknesses", "code"], "action 3", 0.0),
        (["car"], "a cat sat", 0.0),
        ([], "anything", 0.0),
        (["lunch", "lunch"], "lunch", 1.0),
    ],
)
def test_word_share(query_words: list[str], text: str, share: float) -> None:
    assert word_share(query_words, text) == share


def test_bands_follow_the_policy_thresholds() -> None:
    from memory_core.domain.match import match_strength

    t = match_thresholds(
        RankingPolicy(
            match_strong_cosine=0.5,
            match_partial_cosine=0.35,
            match_strong_words=1.0,
            match_partial_words=0.5,
        )
    )
    assert match_strength(0.6, 0.0, t) is Match.STRONG
    assert match_strength(0.2, 1.0, t) is Match.STRONG
    assert match_strength(0.4, 0.0, t) is Match.PARTIAL
    assert match_strength(None, 0.5, t) is Match.PARTIAL
    assert match_strength(0.2, 0.0, t) is Match.WEAK
    assert match_strength(None, 0.25, t) is Match.WEAK
    assert [m.order for m in (Match.WEAK, Match.PARTIAL, Match.STRONG)] == [0, 1, 2]
