"""Sentence embedders behind the Embedder port, chosen by name (see `load_embedder`).

The names below load on first use (PEP 562): `memory_core.embeddings.registry`, which the
settings import to parse the model name, runs this file first, and the background loader
brought anyio into every cold process (a Claude Code hook, `memstrata stats`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core.embeddings.lazy import LazyEmbedder
    from memory_core.embeddings.registry import EmbeddingSpec, load_embedder, parse_embedding_model

_HOMES = {
    "LazyEmbedder": "memory_core.embeddings.lazy",
    "EmbeddingSpec": "memory_core.embeddings.registry",
    "load_embedder": "memory_core.embeddings.registry",
    "parse_embedding_model": "memory_core.embeddings.registry",
}

__all__ = ["EmbeddingSpec", "LazyEmbedder", "load_embedder", "parse_embedding_model"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_core.embeddings' has no attribute {name!r}")
    return getattr(import_module(home), name)
