"""bench.scale's exact-search floor: numpy's top 10, and the embedding then the scan as one call."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bench.scale import _exact_top, embedding_then_exact


def test_the_exact_top_is_every_best_row_best_first() -> None:
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((500, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    top = _exact_top(matrix, query, 10)
    assert list(top) == list(np.argsort(-(matrix @ query))[:10])


def test_each_text_is_embedded_then_scanned_and_timed_as_one() -> None:
    matrix = np.eye(4, dtype=np.float32)
    embedded: list[str] = []

    class Model:
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            embedded.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32)

    samples = embedding_then_exact(Model(), matrix, ["a", "b", "c"], 2)  # type: ignore[arg-type]
    assert embedded == ["a", "b", "c"]
    assert len(samples) == 3 and all(s >= 0 for s in samples)
