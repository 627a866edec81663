"""Token counters: the embedding model's own tokenizer when it ships one, else characters / 4."""

from __future__ import annotations

import threading
from importlib.util import find_spec
from typing import Any

from memory_core.domain.tokens import estimate_tokens

__all__ = ["CharTokenCounter", "WordPieceTokenCounter", "token_counter_for"]


class CharTokenCounter:
    """About four characters per token: no tokenizer to load, close enough for English."""

    name = "chars/4"

    def count(self, text: str) -> int:
        """About len(text) / 4."""
        return estimate_tokens(text) if text else 0


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


def token_counter_for(model_id: str | None) -> CharTokenCounter | WordPieceTokenCounter:
    """The counter that matches the configured embedding model (chars/4 without one)."""
    if model_id is not None and "MiniLM-L6-v2" in model_id:
        # Whether the package is installed, without importing it (the hooks count tokens only
        # when they inject something, and most prompts inject nothing).
        if find_spec("tokenizers") is None:
            return CharTokenCounter()
        return WordPieceTokenCounter()
    return CharTokenCounter()
