"""The overview's ageing chart split at the tier boundaries, and its health notes in the words
of the dashboard (issue 35, N8)."""

from __future__ import annotations

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.domain.health import HealthNote, assess_health
from memory_core.domain.models import Layer, StoreStats, Tier
from server.http.dashboard.advice import dashboard_advice
from server.http.dashboard.chart import age_bars


def _parts(bar: object) -> list[tuple[Tier, int]]:
    return [(s.tier, s.count) for s in bar.segments]  # type: ignore[attr-defined]


def test_day_zero_is_split_into_its_active_and_recent_memories():
    policy = TierPolicy()  # ACTIVE under 1 hour, RECENT under 24
    by_tier = {Tier.ACTIVE: 9, Tier.RECENT: 4, Tier.ARCHIVED: 2, Tier.EXPIRED: 1}
    bars = age_bars({0: 13, 1: 2, 30: 1}, policy, by_tier)
    assert _parts(bars[0]) == [(Tier.ACTIVE, 9), (Tier.RECENT, 4)]
    assert _parts(bars[1]) == [(Tier.ARCHIVED, 2)]
    assert _parts(bars[2]) == [(Tier.EXPIRED, 1)]
    # Stacked from the axis up, ACTIVE at the bottom, together the bar's height.
    active, recent = bars[0].segments
    assert abs(recent.y + recent.height - active.y) < 0.05  # RECENT stands on ACTIVE
    assert abs(active.height + recent.height - bars[0].height) < 0.05
    assert active.height > recent.height


def test_only_active_memories_make_an_active_bar():
    bars = age_bars({0: 9, 1: 0}, TierPolicy(), {Tier.ACTIVE: 9})
    assert _parts(bars[0]) == [(Tier.ACTIVE, 9)]
    assert bars[1].segments == ()


def test_a_boundary_inside_a_later_day_splits_that_day():
    # RECENT until 36 hours: day 1 holds RECENT (24-36 h) and ARCHIVED (36-48 h) memories.
    policy = TierPolicy(active_hours=1, recent_hours=36, archived_days=3)
    by_tier = {Tier.ACTIVE: 1, Tier.RECENT: 5, Tier.ARCHIVED: 6, Tier.EXPIRED: 2}
    bars = age_bars({0: 3, 1: 7, 2: 2, 3: 2}, policy, by_tier)
    assert _parts(bars[0]) == [(Tier.ACTIVE, 1), (Tier.RECENT, 2)]
    assert _parts(bars[1]) == [(Tier.RECENT, 3), (Tier.ARCHIVED, 4)]
    assert _parts(bars[2]) == [(Tier.ARCHIVED, 2)]
    assert _parts(bars[3]) == [(Tier.EXPIRED, 2)]


def test_counts_read_apart_never_make_a_negative_part():
    # A write between the stats and the histogram: the parts still add up to the day.
    bars = age_bars({0: 3}, TierPolicy(), {Tier.ACTIVE: 5})
    assert _parts(bars[0]) == [(Tier.ACTIVE, 3)]
    bars = age_bars({0: 3, 1: 1}, TierPolicy(), {Tier.ACTIVE: 0, Tier.RECENT: 1})
    assert _parts(bars[0]) == [(Tier.RECENT, 3)]


def _stats(by_tier: dict[Tier, int], stale: int = 0) -> StoreStats:
    return StoreStats(
        project="p",
        total=sum(by_tier.values()),
        by_tier=by_tier,
        by_layer={Layer.EPISODIC: sum(by_tier.values())},
        content_bytes=0,
        database_bytes=0,
        oldest=None,
        newest=None,
        stale_tiers=stale,
        never_accessed=0,
    )


def test_health_notes_say_what_to_do_on_the_dashboard_not_which_tool_to_call():
    stats = _stats({Tier.ACTIVE: 1, Tier.RECENT: 0, Tier.ARCHIVED: 1, Tier.EXPIRED: 8}, stale=3)
    pressure = PressurePolicy(max_memories=5)
    notes = assess_health(stats, pressure)
    assert {n.code for n in notes} == {"over_cap", "prune_suggested", "stale_tiers"}
    assert any("prune_expired_contexts" in n.message for n in notes)  # the tools' wording
    advice = dashboard_advice(notes, stats, TierPolicy(), pressure, scheduled=True)
    assert [a.code for a in advice] == [n.code for n in notes]
    for item in advice:
        assert "`prune_expired_contexts`" not in item.message and "dry_run" not in item.message
        assert "recalculate_memory_tiers" not in item.message
    by_code = {a.code: a for a in advice}
    assert by_code["prune_suggested"].message.startswith("8 of 10 memories are EXPIRED")
    assert by_code["prune_suggested"].link == "forgetting"
    assert by_code["over_cap"].link == "forgetting"
    assert "daily maintenance job" in by_code["stale_tiers"].message
    unscheduled = dashboard_advice(notes, stats, TierPolicy(), pressure, scheduled=False)
    assert "memstrata maintain --recalculate" in unscheduled[-1].message


def test_notes_without_a_tool_keep_their_words():
    note = HealthNote(code="inactive", message="Nothing was used in the last day.")
    stats = _stats({Tier.ARCHIVED: 1})
    (advice,) = dashboard_advice([note], stats, TierPolicy(), PressurePolicy(), scheduled=True)
    assert (advice.message, advice.link) == (note.message, None)
