"""What the prompt hook keeps of a search's hits (server.hooks.events._select)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.config.hooks import HookPolicy
from memory_core.domain.match import Match
from memory_core.domain.models import SearchHit
from server.hooks.events import _select
from tests.fakes import make_hit, make_memory


def _hit(memory_id: int, content: str) -> SearchHit:
    when = datetime(2026, 11, 20 + memory_id, tzinfo=UTC)
    return make_hit(
        make_memory(memory_id, when, content=content), rank=memory_id, match=Match.STRONG
    )


def test_a_hit_a_newer_version_follows_is_left_out() -> None:
    """Issue 32: the prompt hook injects the current version of a fact, not what it corrects."""
    hits = [
        _hit(2, "We deploy the staging backend to AWS in Frankfurt"),
        _hit(1, "We deploy the staging backend to Fly.io in Frankfurt"),
        _hit(3, "The payment webhooks verify Stripe signatures"),
    ]
    chosen, lines = _select(hits, set(), "s", "where do we deploy", HookPolicy(), {1: 2})
    assert chosen == [2, 3]
    assert not any("Fly.io" in line for line in lines)
    assert _select(hits, set(), "s", "where do we deploy", HookPolicy())[0] == [2, 1, 3]
