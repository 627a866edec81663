"""The backend-neutral part of the shared-pattern stores: the live-pattern query and row shapes.

Both backends hold the pool in tables of the same names and columns (migration 0014); they
differ in placeholders and drivers only, so the query that decides which published patterns
are still live, and the mapping of rows to domain objects, are written here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memory_core.domain.pattern_pool import PoolPassage
from memory_core.ports.knowledge import PendingDocument, SharedPattern
from memory_core.storage.records import vector_from_bytes, vector_to_bytes

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["LIVE_PATTERNS", "live_patterns", "passage_rows", "pool_passages"]

# Every published pattern with how many opted-in tenants still hold it (`held`) and how many
# held it when it was published (`holders`); `live_patterns` keeps those with held >= k and
# held >= holders, so a deleted document or an opt-out withdraws a pattern at once.
LIVE_PATTERNS = (
    "SELECT p.id, s.text, s.embedding, s.embed_model, p.holders,"
    " (SELECT count(DISTINCT h.tenant) FROM shared_pattern_holders AS h"
    "  JOIN shared_tenants AS t ON t.tenant = h.tenant WHERE h.pattern_id = p.id) AS held"
    " FROM shared_patterns AS p JOIN shared_passages AS s ON s.id = p.passage_id"
    " JOIN shared_tenants AS o ON o.tenant = s.tenant ORDER BY p.id"
)


def live_patterns(
    rows: Sequence[Any], min_tenants: int, model_id: str | None
) -> list[SharedPattern]:
    """The rows of LIVE_PATTERNS that satisfy the k-tenant rule, vectors by `model_id`."""
    return [
        SharedPattern(
            id=int(r[0]),
            text=str(r[1]),
            vector=vector_from_bytes(bytes(r[2])) if r[3] == model_id else None,
        )
        for r in rows
        if int(r[5]) >= min_tenants and int(r[5]) >= int(r[4])
    ]


def pool_passages(rows: Sequence[Any]) -> list[tuple[PoolPassage, Vector]]:
    """Rows of (id, tenant, text, embedding) as passages with their vectors."""
    out: list[tuple[PoolPassage, Vector]] = []
    for r in rows:
        vector = vector_from_bytes(bytes(r[3]))
        assert vector is not None  # the column is NOT NULL
        out.append((PoolPassage(id=int(r[0]), tenant=str(r[1]), text=str(r[2])), vector))
    return out


def passage_rows(
    document: PendingDocument, texts: Sequence[str], vectors: Vector | None, model_id: str
) -> list[tuple[Any, ...]]:
    """shared_passages rows (document_id, tenant, text, embedding, embed_model)."""
    if vectors is None:
        return []
    return [
        (document.id, document.tenant, t, vector_to_bytes(vectors[i]), model_id)
        for i, t in enumerate(texts)
    ]
