"""Before a memory is written: is it one already stored, or a correction of one?

`MemoryService.append` (and `append_many`) embed the new text once, look at its nearest
neighbours of the same project, layer and scope, and judge each with
domain.duplicates.compare: a *duplicate* adds no row (the stored memory is restated), a
*candidate* is named in the answer ("may supersede #12") for the model to confirm. The vector
computed here is the one stored with the new row, so a write costs no second model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_core.domain.corrections import LOOSE_SIMILARITY, announces_change, may_correct
from memory_core.domain.duplicates import DuplicateThresholds, Resemblance, compare
from memory_core.domain.models import Layer, Memory, MemoryDraft, TextQuery
from memory_core.ports import MemoryRepository

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector
    from memory_core.services.indexing import Indexer

__all__ = [
    "MAX_CANDIDATES",
    "NEIGHBOURS",
    "Likeness",
    "Resemblances",
    "batch_twins",
    "embed_texts",
    "resemblances",
]

# Neighbours judged per new memory: duplicates and candidates are among the nearest few.
NEIGHBOURS = 5
# Candidates named in an answer.
MAX_CANDIDATES = 3


@dataclass(frozen=True)
class Likeness:
    """A stored memory and how a new text resembles it."""

    memory: Memory
    resemblance: Resemblance


@dataclass(frozen=True)
class Resemblances:
    """What the store already holds that looks like a new text (and the text's vector)."""

    vector: Vector | None = None
    duplicate: Likeness | None = None
    candidates: list[Likeness] = field(default_factory=list)


async def embed_texts(indexer: Indexer, texts: Sequence[str]) -> list[Vector] | None:
    """Vectors of texts about to be written (see Indexer.embed_new); None without a model."""
    return await indexer.embed_new(texts)


async def resemblances(
    repo: MemoryRepository,
    indexer: Indexer,
    draft: MemoryDraft,
    vector: Vector,
    thresholds: DuplicateThresholds,
) -> Resemblances:
    """Judge `draft` (unkeyed, embedded as `vector`) against its nearest stored neighbours.

    Only current memories of the draft's project, layer and scope (its session, in the
    working layer) count: a superseded memory is history, not a fact to restate.
    """
    matches = await indexer.vectors.search_vectors(
        draft.project, vector, layer=draft.layer, limit=NEIGHBOURS
    )
    # Below the candidate band, neighbours are judged only when the new text announces a
    # change (domain.corrections): judging every text's five nearest cost 0.8 ms a text at
    # 1M rows (bench.scale's batched appends), and most texts correct nothing.
    floor = LOOSE_SIMILARITY if announces_change(draft.content) else thresholds.candidate_similarity
    close = {m.id: 1.0 - m.distance for m in matches if 1.0 - m.distance >= floor}
    if not close:
        return Resemblances(vector=vector)
    scope = TextQuery(
        project=draft.project,
        words=(),
        layer=draft.layer,
        session_id=draft.session_id if draft.layer is Layer.WORKING else None,
    )
    rows = await repo.get_many(draft.project, list(close), scope)
    judged = [
        Likeness(memory=m, resemblance=_judge(draft.content, m.content, close[m.id], thresholds))
        for m in rows
        if m.key is None and (draft.layer is not Layer.WORKING or m.session_id == draft.session_id)
    ]
    judged.sort(key=lambda x: -x.resemblance.similarity)
    duplicate = next((x for x in judged if x.resemblance.kind == "duplicate"), None)
    candidates = [
        x
        for x in judged
        if x.resemblance.kind == "candidate" and x.memory.id not in draft.supersedes
    ][:MAX_CANDIDATES]
    return Resemblances(vector=vector, duplicate=duplicate, candidates=candidates)


def _judge(new: str, old: str, similarity: float, thresholds: DuplicateThresholds) -> Resemblance:
    """domain.duplicates.compare, with a looser candidate that reads as a correction."""
    found = compare(new, old, similarity, thresholds)
    if found.kind == "distinct" and may_correct(new, old, similarity):
        return Resemblance(
            kind="candidate",
            similarity=similarity,
            overlap=found.overlap,
            differs_in=found.differs_in,
        )
    return found


def _scope(draft: MemoryDraft) -> tuple[str, str, str | None]:
    return (
        draft.project,
        draft.layer.value,
        draft.session_id if draft.layer is Layer.WORKING else None,
    )


def batch_twins(
    drafts: Sequence[MemoryDraft], found: Sequence[Resemblances], thresholds: DuplicateThresholds
) -> dict[int, int]:
    """Items of a batch that near-duplicate an earlier item of it: {later index: earlier}.

    Only items with a vector and no stored duplicate are compared; the cosines come from one
    matrix product, and only pairs above the duplicate similarity are judged by their words.
    """
    indexed = [
        i
        for i, f in enumerate(found)
        if f.vector is not None and f.duplicate is None and drafts[i].key is None
    ]
    if len(indexed) < 2:
        return {}  # e.g. a hook's capture, written without vectors: numpy never loads
    import numpy as np  # loaded with the embedder that made the vectors

    matrix = np.stack([np.asarray(found[i].vector, dtype=np.float32) for i in indexed])
    cosines = matrix @ matrix.T
    twins: dict[int, int] = {}
    for b in range(1, len(indexed)):
        later = indexed[b]
        for a in range(b):
            first = indexed[a]
            if first in twins or float(cosines[a, b]) < thresholds.duplicate_similarity:
                continue
            if _scope(drafts[first]) != _scope(drafts[later]):
                continue
            judged = compare(
                drafts[later].content, drafts[first].content, float(cosines[a, b]), thresholds
            )
            if judged.kind == "duplicate":
                twins[later] = first
                break
    return twins
