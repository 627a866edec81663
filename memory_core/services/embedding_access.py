"""How the cache-hierarchy services get an embedder: writes wait long for it, reads briefly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from memory_core.errors import EmbeddingUnavailableError
from memory_core.ports import Embedder
from memory_core.ports.embeddings import EmbedderSource

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector


__all__ = ["EmbeddingAccess", "cosine"]

NO_MODEL_NOTE = "No embedding model is configured"


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors (unit length by the Embedder contract, so a dot)."""
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


@dataclass(frozen=True)
class EmbeddingAccess:
    """The configured model, if any, with the waits of writes and reads."""

    source: EmbedderSource | None
    write_wait: float
    read_wait: float = 0.0

    @property
    def model_id(self) -> str | None:
        """The configured model's id, or None."""
        return None if self.source is None else self.source.model_id

    async def for_write(self) -> tuple[Embedder | None, str | None]:
        """The embedder, waiting up to `write_wait` s for it to load; else None and why.

        Trigger: a write while the model loads. Why: a row stored without a vector is found
        only by words until it is written again. Outcome: writes wait (bounded) for the model.
        """
        return await self._get(self.write_wait)

    async def for_read(self) -> tuple[Embedder | None, str | None]:
        """The embedder, waiting up to `read_wait` s for it to load; else None and why.

        Trigger: a search by meaning right after start-up, while the model loads. Why: without
        it a rule or document worded differently is not found. Outcome: the read waits
        briefly, then goes on by words and says so.
        """
        return await self._get(self.read_wait)

    async def _get(self, wait: float) -> tuple[Embedder | None, str | None]:
        if self.source is None:
            return None, NO_MODEL_NOTE
        try:
            return await self.source.wait(wait), None
        except EmbeddingUnavailableError as exc:
            return None, f"The embedding model is unavailable ({exc.reason})"

    @staticmethod
    async def embed(embedder: Embedder, texts: Sequence[str]) -> Vector:
        """Embed texts off the event loop: the model is CPU-bound."""
        import numpy as np

        vectors = await anyio.to_thread.run_sync(embedder.embed, list(texts))
        return np.asarray(vectors, dtype=np.float32)
