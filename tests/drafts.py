"""A MemoryDraft as the service would hand it to a repository, for the storage tests."""

from __future__ import annotations

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft

__all__ = ["draft"]


def draft(content: str, layer: Layer = Layer.EPISODIC, **fields: object) -> MemoryDraft:
    """A draft of project "p" unless `fields` say otherwise (key, session_id, tags, ...)."""
    return MemoryDraft.model_validate(
        {
            "project": "p",
            "layer": layer,
            "content": content,
            "content_hash": content_hash(content),
            "token_count": len(content.split()),
            **fields,
        }
    )
