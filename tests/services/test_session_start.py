"""SessionStartService: sections in order, the budget, the character cap, the last session."""

from __future__ import annotations

from memory_core.config.policies import TierPolicy
from memory_core.domain.hook_session import TranscriptCursor
from memory_core.domain.models import Layer
from memory_core.services.memories import MemoryService
from memory_core.services.session_start import (
    SESSION_SUMMARY_KIND,
    ScreenContext,
    SessionStartService,
)
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock

P = "shop"
SCREEN = ScreenContext(
    cwd="/home/dev/shop", branch="main", status="2 changed", changed_files=("a.py", "b.py")
)


def builder(storage: StorageUnderTest, clock: FrozenClock) -> SessionStartService:
    return SessionStartService(
        repo=storage.repo(),
        clock=clock,
        tiers=TierPolicy(),
        hook_sessions=storage.hook_sessions(),
    )


async def test_an_empty_project_without_screen_context_injects_nothing(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    built = await builder(storage, clock).build(P)
    assert built.empty and built.tokens == 0


async def test_sections_come_in_order_rules_first(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    await service.append(P, Layer.EPISODIC, "Deployed v2.3 to staging")
    await service.learn(P, "db.engine", "PostgreSQL 16")
    await service.append(P, Layer.PROCEDURAL, "run make lint first", key="before committing")
    summary = await service.append(
        P,
        Layer.EPISODIC,
        "Claude Code session s0: fixed the webhook",
        metadata={"kind": SESSION_SUMMARY_KIND},
        session_id="s0",
    )
    await storage.hook_sessions().save_transcript(
        P, "s0", TranscriptCursor(3, None), summary.memory.id, clock.now()
    )
    await service.append("other", Layer.EPISODIC, "not this project")
    built = await builder(storage, clock).build(P, screen=SCREEN, session_id="s1")
    text = built.text
    order = [
        text.index("## Rules saved for this project"),
        text.index("## Recent memories"),
        text.index("## Last session"),
        text.index("## Where you are working"),
    ]
    assert order == sorted(order)
    assert " before committing: run make lint first" in text
    assert "when before committing" not in text  # the condition opens with its own word
    assert "db.engine: PostgreSQL 16" in text and "Deployed v2.3" in text
    assert "fixed the webhook" in text and text.count("fixed the webhook") == 1
    assert "git branch: main (2 changed)" in text and "a.py, b.py" in text
    assert "not this project" not in text
    assert built.sections["rules"] == 1 and built.sections["memories"] == 2
    assert summary.memory.id not in built.memory_ids
    # The session being started is not its own "last session".
    own = await builder(storage, clock).build(P, session_id="s0")
    assert "## Last session" not in own.text


async def test_the_budget_keeps_screen_and_rules_and_cuts_memories(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    for i in range(40):
        await service.append(P, Layer.EPISODIC, f"event number {i} " + "detail " * 30)
    await service.append(P, Layer.PROCEDURAL, "use the staging cluster", key="deploying")
    built = await builder(storage, clock).build(P, screen=SCREEN, token_budget=300)
    assert built.tokens <= 330  # chars/4, plus the headings the budget does not price
    assert "use the staging cluster" in built.text and "Where you are working" in built.text
    assert 0 < built.sections["memories"] < 40 and built.omitted > 0
    # Newest first: the last appended event is shown, the first one is not.
    assert "event number 39" in built.text and "event number 0 " not in built.text


async def test_the_text_never_exceeds_the_character_cap(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    for i in range(30):
        await service.append(P, Layer.EPISODIC, f"memory {i} " + "word " * 70)
    built = await builder(storage, clock).build(P, token_budget=2500, max_chars=1000)
    assert len(built.text) <= 1000 and built.text.endswith("…\n</memstrata-memory>")


async def test_preferences_are_listed_only_for_a_known_user(
    storage: StorageUnderTest, clock: FrozenClock, service: MemoryService
) -> None:
    class Prefs:
        async def list_user(self, user: str, model_id: str | None) -> list[tuple[object, None]]:
            from memory_core.domain.knowledge import Preference

            pref = Preference(
                id=1,
                user=user,
                key="tone",
                value="answer tersely",
                flow_id=None,
                origin="explicit",
                created_at=clock.now(),
                updated_at=clock.now(),
            )
            return [(pref, None)]

    await service.append(P, Layer.EPISODIC, "something happened")
    start = SessionStartService(
        repo=storage.repo(),
        clock=clock,
        tiers=TierPolicy(),
        preferences=Prefs(),  # type: ignore[arg-type]
    )
    assert "answer tersely" not in (await start.build(P)).text
    text = (await start.build(P, user="ana")).text
    assert "## Preferences of ana" in text and "- tone: answer tersely" in text
