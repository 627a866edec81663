"""The default embedder must reproduce the published all-MiniLM-L6-v2 model."""

import numpy as np
import pytest

from memory_core.embeddings.minilm_onnx import MiniLMOnnxEmbedder


@pytest.fixture(scope="module")
def embedder() -> MiniLMOnnxEmbedder:
    return MiniLMOnnxEmbedder()


def test_matches_the_model_card_similarities(embedder: MiniLMOnnxEmbedder) -> None:
    # sentence-transformers' model card for all-MiniLM-L6-v2 gives 0.6660 and 0.1046 (fp32);
    # int8 quantisation moves them by a few hundredths at most.
    v = embedder.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    sims = v @ v.T
    assert sims[0, 1] == pytest.approx(0.666, abs=0.03)
    assert sims[0, 2] == pytest.approx(0.105, abs=0.05)


def test_batching_does_not_change_vectors(embedder: MiniLMOnnxEmbedder) -> None:
    texts = ["short", "a much longer sentence " * 8, "medium length text here", "x"]
    batched = embedder.embed(texts)
    single = np.concatenate([embedder.embed([t]) for t in texts])
    assert np.allclose(batched, single, atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_idle_threads_do_not_spin(embedder: MiniLMOnnxEmbedder) -> None:
    # A hybrid search embeds its query while the keyword SQL runs on another thread: a
    # busy-waiting intra-op thread would take that thread's core (docs/benchmarks.md).
    options = embedder._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
