"""Choose an embedder by name: the default ONNX MiniLM, `st:<model>`, or `none`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from memory_core.errors import InvalidInputError
from memory_core.ports import Embedder

__all__ = ["DEFAULT_MODEL", "EmbeddingSpec", "load_embedder", "parse_embedding_model"]

DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"


class EmbeddingSpec(BaseModel):
    """Which embedder, and the id and dimensions it writes under."""

    model_config = ConfigDict(frozen=True)

    kind: str  # "onnx" | "st" | "none"
    name: str
    model_id: str
    dims: int


def parse_embedding_model(value: str, dims: int = 384) -> EmbeddingSpec:
    """Parse MEMSTRATA_EMBEDDING_MODEL.

    `all-MiniLM-L6-v2-int8` (default; also `default`), `none` (keyword search only), or
    `st:<name or path>` for sentence-transformers, whose dimensions `dims` must give.
    """
    text = value.strip()
    if text in ("", "default", DEFAULT_MODEL):
        return EmbeddingSpec(kind="onnx", name=DEFAULT_MODEL, model_id=DEFAULT_MODEL, dims=384)
    if text == "none":
        return EmbeddingSpec(kind="none", name="none", model_id="none", dims=0)
    if text.startswith("st:") and len(text) > 3:
        return EmbeddingSpec(kind="st", name=text[3:], model_id=text, dims=dims)
    raise InvalidInputError(
        "embedding_model", f"must be {DEFAULT_MODEL!r}, 'none' or 'st:<model>' (got {value!r})"
    )


def load_embedder(spec: EmbeddingSpec) -> Embedder:
    """Build (and so load) the embedder a spec names; slow, so call it off the event loop."""
    if spec.kind == "onnx":
        from memory_core.embeddings.minilm_onnx import MiniLMOnnxEmbedder

        return MiniLMOnnxEmbedder()
    if spec.kind == "st":
        from memory_core.embeddings.sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(spec.name)
        if embedder.dims != spec.dims:
            raise InvalidInputError(
                "embedding_dims", f"{spec.name} has {embedder.dims} dimensions, not {spec.dims}"
            )
        return embedder
    raise InvalidInputError("embedding_model", "'none' has no embedder to load")
