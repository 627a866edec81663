"""Keep one source from filling every slot of a ranked answer (pure)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

__all__ = ["cap_per_group"]

T = TypeVar("T")


def cap_per_group(
    ranked: Sequence[T], group_of: Callable[[T], Hashable], *, per_group: int, limit: int
) -> list[T]:
    """The best `limit` items, taking at most `per_group` from any one group first.

    Items are taken in rank order while their group is under its cap; the slots still free
    after that go to the passed-over items, again in rank order. So a long document cannot
    crowd out the other sources, yet a tenant whose only relevant text is one document still
    gets a full answer.

    Args:
        ranked: Items, best first.
        group_of: The group (for chunks: the source document) of an item.
        per_group: Most items of one group before every other group has had its turn.
        limit: Most items returned.

    Returns:
        Up to `limit` items: the capped picks in rank order, then the overflow in rank order.
    """
    taken: list[T] = []
    overflow: list[T] = []
    counts: dict[Hashable, int] = {}
    for item in ranked:
        group = group_of(item)
        if counts.get(group, 0) < per_group and len(taken) < limit:
            counts[group] = counts.get(group, 0) + 1
            taken.append(item)
        else:
            overflow.append(item)
    return taken + overflow[: max(limit - len(taken), 0)]
