"""The one token counter: every `token_budget`, compression threshold and reported count uses it.

It is an estimate, about four characters per token, and not the embedding model's WordPiece
tokenizer. Why: the budgets are spent by the client's language model, whose tokenizer neither
count is; the estimate needs no import (the hooks, `stats` and keyword `search` stay light: the
tokenizer costs ~30 ms to import and 0.1-0.4 ms a turn against under 1 us), and it is what the
`token_count` of every stored memory already holds. Measured on the 2,760 LoCoMo dev turns
(`python -m bench.answers --token-gap`): the estimate is 6.6% above the all-MiniLM-L6-v2
tokenizer in total, median 1.06x a turn (5th-95th percentile 0.85x-1.26x), and 0.99x-1.18x on
20-turn texts, the size budgets cut. So a budget's answer is within a few percent of its size in
MiniLM tokens.
"""

from __future__ import annotations

import math

__all__ = ["CHARS_PER_TOKEN", "COUNTER_NAME", "count_tokens"]

CHARS_PER_TOKEN = 4
COUNTER_NAME = "chars/4"  # what `get_session_stats` reports as its token counter


def count_tokens(text: str) -> int:
    """Tokens in `text`: about four characters each (0 for "", at least 1 otherwise)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
