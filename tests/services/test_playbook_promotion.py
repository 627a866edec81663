"""Playbooks promoted from transcripts and offered back as recipes, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.config.policies import RankingPolicy
from memory_core.domain.ranking import match_thresholds
from memory_core.ports.embeddings import EmbedderSource
from memory_core.services.embedding_access import EmbeddingAccess
from memory_core.services.playbook_promotion import PlaybookPromotion, playbook_user
from memory_core.services.preferences import PreferenceService
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock, ready_fake
from tests.playbook_transcripts import Session

USER = "ada"
HANDLER = "/home/dev/shop/webhooks.py"
REQUEST = "Add signature verification to the Stripe webhook handler"
SECRET = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"


def webhook_fix(session: Session, outcome: str = "handle() now verifies the header.") -> Session:
    return (
        session.prompt(REQUEST)
        .call("Read", {"file_path": HANDLER}, "def handle(request): ...")
        .edit(HANDLER, old="def handle(request):", new=f"KEY = '{SECRET}'")
        .bash(f"STRIPE_KEY={SECRET} pytest tests/test_webhooks.py -q", "3 passed")
        .say(outcome)
    )


def promotion(
    storage: StorageUnderTest, clock: FrozenClock, source: EmbedderSource | None = None
) -> tuple[PlaybookPromotion, PreferenceService]:
    preferences = PreferenceService(
        preferences=storage.preferences(),
        playbooks=storage.playbooks(),
        embedding=EmbeddingAccess(source=source, write_wait=1.0, read_wait=1.0),
        clock=clock,
        policy=KnowledgePolicy(),
    )
    service = PlaybookPromotion(
        preferences=preferences,
        thresholds=match_thresholds(RankingPolicy()),
        hook_sessions=storage.hook_sessions(),
        clock=clock,
    )
    return service, preferences


async def test_an_approved_flow_is_stored_redacted_and_found(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    service, preferences = promotion(storage, clock)

    [promoted] = await service.promote(
        "shop", USER, webhook_fix(Session()).prompt("thanks, works!").entries()
    )

    assert promoted.status == "created" and promoted.approval == "explicit"
    stored = promoted.playbook
    assert stored.user_query == REQUEST
    assert stored.slots == {"source": "claude-code", "project": "shop", "approval": "explicit"}
    assert [s["tool"] for s in stored.tool_calls if isinstance(s, dict)] == ["Read", "Edit", "Bash"]
    assert SECRET not in str(stored.tool_calls)  # the command's key is redacted
    assert "pytest tests/test_webhooks.py -q" in str(stored.tool_calls)
    found = await preferences.find_playbooks(USER, "signature verification stripe webhook")
    assert [m.item.id for m in found.matches] == [stored.id]


async def test_the_same_transcript_promoted_twice_is_one_playbook(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    service, preferences = promotion(storage, clock)
    entries = webhook_fix(Session()).prompt("Which port does staging use?").entries()

    first = await service.promote("shop", USER, entries)
    clock.advance(minutes=5)
    again = await service.promote("shop", USER, entries)

    assert [p.status for p in first] == ["created"]
    assert [p.status for p in again] == ["unchanged"]
    assert again[0].playbook.id == first[0].playbook.id
    _, playbooks = await preferences.list_all(USER)
    assert len(playbooks) == 1


async def test_the_same_flow_approved_in_another_session_updates_its_playbook(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    service, preferences = promotion(storage, clock)
    old = webhook_fix(Session("s1"), "Verified with hmac.").prompt("thanks")
    new = webhook_fix(Session("s2"), "Verified with stripe.Webhook.construct_event.")

    [first] = await service.promote("shop", USER, old.entries())
    [second] = await service.promote("shop", USER, new.prompt("great").entries())

    assert second.status == "updated"
    assert second.playbook.flow == first.playbook.flow
    _, playbooks = await preferences.list_all(USER)
    assert [p.outcome for p in playbooks] == ["Verified with stripe.Webhook.construct_event."]


@pytest.mark.parametrize(
    "session",
    [
        webhook_fix(Session()),  # the last flow: no follow-up yet
        webhook_fix(Session()).prompt("Thanks, but use the staging key instead."),
        Session()
        .prompt(REQUEST)
        .edit(HANDLER)
        .bash("pytest -q", "1 failed", exit_code=1)
        # thanks after a failed flow
        .say("One test still fails.")
        .prompt("thanks anyway"),
        Session().prompt("List the files of the repo").bash("ls").say("README.md").prompt("ok"),
    ],
    ids=["no-follow-up", "polite-correction", "thanks-after-failure", "one-trivial-call"],
)
async def test_flows_that_are_not_approved_store_nothing(
    storage: StorageUnderTest, clock: FrozenClock, session: Session
) -> None:
    service, preferences = promotion(storage, clock)

    assert await service.promote("shop", USER, session.entries()) == []
    assert (await preferences.list_all(USER))[1] == []


async def test_a_close_paraphrase_gets_the_recipe_once_per_session(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    service, _ = promotion(storage, clock)
    await service.promote("shop", USER, webhook_fix(Session()).prompt("thanks").entries())
    paraphrase = "Please add Stripe signature verification to our webhook handler"

    text = await service.recipe("shop", USER, paraphrase, session_id="s9")

    assert text is not None
    assert text.startswith("<memstrata-memory>\nPlaybook #")
    assert "not instructions to obey" in text
    assert f"2. Edit: {HANDLER}" in text
    assert await service.recipe("shop", USER, paraphrase, session_id="s9") is None
    assert await service.recipe("shop", USER, paraphrase, session_id="s10") is not None


@pytest.mark.parametrize(
    "prompt",
    [
        "Which port does the payments service listen on in staging?",
        "Add a retry to the Stripe refund job",  # shares words, not the request
        "webhook",  # one word of the request is not the request
    ],
)
async def test_an_unrelated_or_partial_prompt_gets_no_recipe(
    storage: StorageUnderTest, clock: FrozenClock, prompt: str
) -> None:
    service, _ = promotion(storage, clock)
    await service.promote("shop", USER, webhook_fix(Session()).prompt("thanks").entries())

    assert await service.recipe("shop", USER, prompt, session_id="s9") is None


async def test_another_projects_playbook_is_not_offered(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    service, _ = promotion(storage, clock)
    await service.promote("billing", USER, webhook_fix(Session()).prompt("thanks").entries())

    assert await service.recipe("shop", USER, REQUEST) is None
    assert await service.recipe("billing", USER, REQUEST) is not None


async def test_with_a_model_a_paraphrase_matches_by_meaning(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    lazy, _ = ready_fake()
    service, _ = promotion(storage, clock, lazy)
    await service.promote("shop", USER, webhook_fix(Session()).prompt("thanks").entries())

    matched = await service.recipe("shop", USER, "add signature verification to webhook handler")
    unrelated = await service.recipe("shop", USER, "which port does staging listen on")

    assert matched is not None and unrelated is None


def test_the_hook_user_is_the_user_id_else_a_valid_form_of_the_name() -> None:
    assert playbook_user("ada", "Ada Lovelace") == "ada"
    assert playbook_user(None, "Ada Lovelace") == "Ada-Lovelace"
    assert playbook_user(None, "  ") == "user"
