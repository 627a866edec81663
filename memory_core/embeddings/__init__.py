"""Sentence embedders behind the Embedder port, chosen by name (see `load_embedder`)."""

from memory_core.embeddings.lazy import LazyEmbedder
from memory_core.embeddings.registry import EmbeddingSpec, load_embedder, parse_embedding_model

__all__ = ["EmbeddingSpec", "LazyEmbedder", "load_embedder", "parse_embedding_model"]
