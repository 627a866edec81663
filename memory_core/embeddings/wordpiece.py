"""The all-MiniLM-L6-v2 WordPiece tokenizer as a counter: a measuring instrument, not a budget.

Budgets count with memory_core/domain/tokens.py. This counter measures what a text costs a
client (`memstrata tools`, docs/gen_tools.py, bench/) and how far the budget estimate is from
a real tokenizer (`python -m bench.answers --token-gap`).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["WordPieceTokenCounter"]


class WordPieceTokenCounter:
    """Counts with the vendored all-MiniLM-L6-v2 tokenizer (loaded on first use, ~50 ms).

    Only the tokenizer is loaded, never the model, so counting does not wait for embeddings.
    """

    name = "all-MiniLM-L6-v2 tokenizer"

    def __init__(self) -> None:
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                # Here, not at the top: minilm_onnx loads numpy, which counting never needs.
                from memory_core.embeddings.minilm_onnx import TOKENIZER_PATH

                tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
                # Count every token of long texts: budgets see the whole entry, not 256 tokens.
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._tokenizer

    def count(self, text: str) -> int:
        """WordPiece tokens of `text`, without the [CLS]/[SEP] markers."""
        if not text:
            return 0
        tokenizer = self._tokenizer or self._load()
        return len(tokenizer.encode(text, add_special_tokens=False).ids)
