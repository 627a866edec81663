"""domain.corrections: which newer texts read as corrections of older ones, below the band.

The pairs here are not bench.stale_facts' templates: they check that the rules hold on other
wordings, and that additions about the same subject are not taken for corrections.
"""

from __future__ import annotations

import pytest

from memory_core.domain.corrections import announces_change, corrects, may_correct, replaces_value

# (older, newer, question): the newer corrects the older (cosines under MiniLM 0.38-0.64).
CORRECTIONS = [
    (
        "We use Yarn for the monorepo.",
        "We migrated the monorepo to pnpm.",
        "Which package manager does the monorepo use?",
    ),
    (
        "The design review happens on Tuesday.",
        "The design review moved to Thursday.",
        "When is the design review?",
    ),
    (
        "Support tickets go to Zendesk.",
        "Support tickets now go to Linear.",
        "Where do support tickets go?",
    ),
    (
        "Dana is the on-call lead for payments.",
        "Priya took over as on-call lead for payments.",
        "Who is the on-call lead for payments?",
    ),
    (
        "The cache keeps entries for 10 minutes.",
        "The cache keeps entries for 45 minutes.",
        "How long does the cache keep entries?",
    ),
    (
        "Feature flags live in LaunchDarkly.",
        "We switched feature flags to Unleash.",
        "Where do feature flags live?",
    ),
]

# (older, newer, question): the newer adds to the subject and corrects nothing.
ADDITIONS = [
    (
        "We use Yarn for the monorepo.",
        "The monorepo now has a CODEOWNERS file.",
        "Which package manager does the monorepo use?",
    ),
    (
        "The design review happens on Tuesday.",
        "Design review notes now go to the wiki.",
        "When is the design review?",
    ),
    (
        "Support tickets go to Zendesk.",
        "Support tickets now need a severity label.",
        "Where do support tickets go?",
    ),
    (
        "Dana is the on-call lead for payments.",
        "The payments on-call rotation is now weekly.",
        "Who is the on-call lead for payments?",
    ),
    (
        "Feature flags live in LaunchDarkly.",
        "Feature flags are now reviewed every quarter.",
        "Where do feature flags live?",
    ),
    (
        "Access tokens expire after 15 minutes.",
        "Refresh tokens now live for 30 days.",
        "When do access tokens expire?",
    ),
]


@pytest.mark.parametrize(("older", "newer", "question"), CORRECTIONS)
def test_a_correction_below_the_band_is_read_as_one(older: str, newer: str, question: str) -> None:
    assert corrects(newer, older, 0.5, question)
    assert may_correct(newer, older, 0.5)


@pytest.mark.parametrize(("older", "newer", "question"), ADDITIONS)
def test_an_addition_about_the_subject_is_not_a_correction(
    older: str, newer: str, question: str
) -> None:
    assert not corrects(newer, older, 0.6, question)


@pytest.mark.parametrize(("older", "newer", "question"), CORRECTIONS)
def test_nothing_is_a_correction_under_the_loose_floor(
    older: str, newer: str, question: str
) -> None:
    assert not corrects(newer, older, 0.3, question)
    assert not may_correct(newer, older, 0.3)


def test_the_older_text_is_never_read_as_correcting_the_newer() -> None:
    older, newer, question = CORRECTIONS[0]
    assert not corrects(older, newer, 0.5, question)


def test_change_words_strong_and_weak() -> None:
    assert announces_change("We moved the API to port 9090.") == "strong"
    assert announces_change("Bob took over the billing service.") == "strong"
    assert announces_change("We no longer deploy on Fridays.") == "strong"
    assert announces_change("Tokens now live for 30 minutes.") == "weak"
    assert announces_change("The API listens on port 8080.") is None


def test_a_close_addition_states_no_new_value() -> None:
    assert not replaces_value(
        "The default branch is now protected.", "The default branch is master."
    )
    assert replaces_value("We renamed the default branch to main.", "The default branch is master.")
    assert replaces_value(
        "Access tokens now live for 30 minutes.", "Access tokens expire after 15 minutes."
    )
