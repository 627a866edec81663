"""A whole memory row through the redaction gate (imports, where rows arrive complete)."""

from __future__ import annotations

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Memory
from memory_core.domain.redaction import Redactor

__all__ = ["redact_memory"]


def redact_memory(memory: Memory, gate: Redactor) -> Memory:
    """`memory` with credentials taken out of its content, key and metadata.

    The key is redacted as a key (a short hash of the secret in its marker) exactly as `learn`
    redacts it, so an imported fact and a live one with the same secret share one key. The
    content hash is derived again from the redacted text: it is the identity of unkeyed rows.
    """
    content = gate.text(memory.content)
    key = None if memory.key is None else gate.key(memory.key)
    metadata = gate.mapping(dict(memory.metadata))
    if content == memory.content and key == memory.key and metadata == memory.metadata:
        return memory
    return memory.model_copy(
        update={
            "content": content,
            "key": key,
            "metadata": metadata,
            "content_hash": content_hash(content),
        }
    )
