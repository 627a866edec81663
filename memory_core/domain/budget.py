"""Token budgets: spend one on texts, counted by the one counter (domain/tokens.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import takewhile
from typing import TypeVar

from memory_core.domain.tokens import count_tokens

__all__ = ["TokenAllowance"]

T = TypeVar("T")


class TokenAllowance:
    """What is left of a token budget; None means no budget (everything fits).

    The fitting takes texts, never precomputed costs, so no answer can be cut by another count
    than `count_tokens` (tests/test_token_budget_paths.py holds that).
    """

    def __init__(self, tokens: int | None, *, per_item: int = 0) -> None:
        """Start with `tokens` to spend.

        Args:
            tokens: The budget, or None for none.
            per_item: Tokens added to each text's count, e.g. 1 for the newline joining lines.
        """
        self.left = tokens
        self.per_item = per_item
        self.omitted = 0

    def take(self, text: str) -> bool:
        """Spend the tokens of `text` if they fit; else count it as omitted and keep the rest."""
        if self.left is None:
            return True
        cost = count_tokens(text) + self.per_item
        if cost > self.left:
            self.omitted += 1
            return False
        self.left -= cost
        return True

    def prefix(self, items: Iterable[T], text: Callable[[T], str]) -> tuple[list[T], int]:
        """The longest prefix of `items` whose texts fit, and how many items were left out.

        A prefix (not a knapsack) because the order is the ranking: a lower-ranked short item
        never displaces a better one.
        """
        items = list(items)
        kept = list(takewhile(lambda item: self.take(text(item)), items))
        return kept, len(items) - len(kept)
