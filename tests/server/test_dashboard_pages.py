"""The dashboard's page data on both backends: the overview's counts, chart parts and notes,
the forgetting preview, a search's hits and a pending summary (issues 35 N8 and 37.4)."""

from __future__ import annotations

import pytest

from memory_core.domain.models import Layer, SearchMode, Tier
from memory_core.services.truth import TruthService
from server.app_context import AppContext
from server.container import open_container
from server.http.dashboard import pages
from server.settings import Settings
from tests.backends import settings_on
from tests.e2e.test_dashboard_http import seed_waiting_session
from tests.fakes import FrozenClock


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


async def test_pages_at_every_age_on_both_backends(settings: Settings, clock: FrozenClock):
    now = clock.now()
    async with open_container(settings, clock) as c:
        memories = c.memories
        clock.advance(days=-40)
        old = [
            (await memories.append("p", Layer.EPISODIC, f"release note {n} of the old plan"))
            for n in range(30)
        ]
        clock.set(now)
        clock.advance(hours=-5)
        for n in range(4):
            await memories.append("p", Layer.EPISODIC, f"release review {n} this morning")
        clock.set(now)
        clock.advance(minutes=-5)
        newer = await memories.append(
            "p", Layer.EPISODIC, "release plan moved", supersedes=[old[0].memory.id]
        )
        await TruthService(memories).pin("p", [old[1].memory.id])
        await seed_waiting_session(c.conversations, "p", "waiting")
        clock.set(now)
        app = AppContext(container=c, scheduler=None)

        overview = await pages.overview_page(app, "p")
        stats = overview.stats
        assert (stats.total, stats.superseded, stats.pinned) == (35, 1, 1)
        assert stats.by_tier[Tier.ACTIVE] == 1 and stats.by_tier[Tier.RECENT] == 4
        day0 = overview.bars[0]
        assert [(s.tier, s.count) for s in day0.segments] == [(Tier.ACTIVE, 1), (Tier.RECENT, 4)]
        assert sum(b.count for b in overview.bars) == 35
        prune = next(a for a in overview.health if a.code == "prune_suggested")
        assert "prune_expired_contexts" not in prune.message and prune.link == "forgetting"
        # The forgetting preview: the 30 old ones but the pinned one, oldest use first.
        first = await pages.forgetting_page(app, "p", None)
        assert first.counted and first.total == 29 and len(first.rows) == 29
        assert old[1].memory.id not in [m.id for m in first.rows]
        assert first.rows[0].superseded_by == newer.memory.id
        found = await pages.browse_page(
            app,
            "p",
            text="release",
            mode=SearchMode.KEYWORD,
            layer=None,
            tier=None,
            session_id=None,
            before_id=None,
        )
        assert 0 < len(found.hits) <= pages.SEARCH_SHOWN

        talk = await pages.conversations_page(app, "p")
        (line,) = talk.sessions
        assert line.info.pending is not None and line.summaries == []
        assert line.pending_grace is not None and line.pending_grace >= 1
