"""The overview's health notes as a person on the dashboard acts on them.

The stats' notes (memory_core.domain.health_findings) are written for an MCP client: "call
`prune_expired_contexts` (try dry_run=true first)". A person reading the dashboard has no tool
to call; what they can do is on the dashboard's own pages (the forgetting page previews the
prune and holds its button) or happens by itself (the scheduled jobs). So each finding that
names a tool is said again here in those terms, with a link to the page where it is done;
the finding's code is kept, so a note can still be matched to the tools' answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.config.policies import PressurePolicy, TierPolicy
from memory_core.domain.health import HealthNote
from memory_core.domain.models import StoreStats, Tier

__all__ = ["Advice", "dashboard_advice"]


@dataclass(frozen=True)
class Advice:
    """One health finding, said for the dashboard, and the page where it is acted on."""

    code: str
    message: str
    link: str | None = None  # a section of the project ("forgetting"), None: nothing to click
    link_text: str = ""


def dashboard_advice(
    notes: list[HealthNote],
    stats: StoreStats,
    tiers: TierPolicy,
    pressure: PressurePolicy,
    *,
    scheduled: bool,
) -> list[Advice]:
    """`notes` in the words of the dashboard, in their order.

    `scheduled`: whether this process runs the maintenance jobs (the overview lists them).
    """
    return [_advice(note, stats, tiers, pressure, scheduled) for note in notes]


def _advice(
    note: HealthNote,
    stats: StoreStats,
    tiers: TierPolicy,
    pressure: PressurePolicy,
    scheduled: bool,
) -> Advice:
    expired = stats.by_tier.get(Tier.EXPIRED, 0)
    days = f"{tiers.archived_days:g}"
    if note.code == "prune_suggested":
        return Advice(
            note.code,
            f"{expired} of {stats.total} memories are EXPIRED (unused for {days} days or "
            "more). The Forgetting page lists what pruning would delete, oldest first, and "
            "its button deletes them.",
            "forgetting",
            "Review what pruning would delete",
        )
    if note.code == "over_cap" and expired + _archived(stats, pressure) > 0:
        which = "EXPIRED or ARCHIVED" if pressure.evict_archived else "EXPIRED"
        return Advice(
            note.code,
            f"{stats.total} memories, over the cap of {pressure.max_memories}: the least used "
            f"{which} ones are deleted at the next write or the daily maintenance. To choose "
            "what goes first, prune or forget by filter on the Forgetting page.",
            "forgetting",
            "Choose what to delete first",
        )
    if note.code == "stale_tiers":
        when = (
            "the daily maintenance job stores the new ones (see Scheduled maintenance below)"
            if scheduled
            else "`memstrata maintain --recalculate` stores the new ones (maintenance is not "
            "scheduled in this process)"
        )
        return Advice(
            note.code,
            f"{stats.stale_tiers} memories have a stored tier that is out of date. The counts "
            f"on this page are already as of now; {when}.",
        )
    if note.code == "empty":
        return Advice(note.code, "No memories yet: they appear here as your assistant stores them.")
    return Advice(note.code, note.message)


def _archived(stats: StoreStats, pressure: PressurePolicy) -> int:
    """ARCHIVED memories the cap may delete (none unless it may evict them)."""
    return stats.by_tier.get(Tier.ARCHIVED, 0) if pressure.evict_archived else 0
