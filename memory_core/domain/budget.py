"""Token budgets: cut an ordered answer so it fits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["fit_to_budget"]

T = TypeVar("T")


def fit_to_budget(
    items: Sequence[T], cost: Callable[[T], int], budget: int | None
) -> tuple[list[T], int]:
    """Keep the longest prefix of `items` whose total cost fits `budget`.

    A prefix (not a knapsack) because the order is the ranking: a lower-ranked short item never
    displaces a better one.

    Returns:
        The kept items and how many were left out.
    """
    if budget is None:
        return list(items), 0
    kept: list[T] = []
    spent = 0
    for item in items:
        spent += cost(item)
        if spent > budget:
            break
        kept.append(item)
    return kept, len(items) - len(kept)
