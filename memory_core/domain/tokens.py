"""Token estimates for budgets, without loading a tokenizer."""

from __future__ import annotations

import math

__all__ = ["estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Estimate the model tokens in `text` at about four characters per token (at least one)."""
    return max(1, math.ceil(len(text) / 4))
