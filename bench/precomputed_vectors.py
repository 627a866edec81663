"""Another embedding model's vectors in place of the store's, for `bench.locomo --vectors`.

A model that memstrata does not ship (it needs torch, or runs only on one platform) can still be
measured on LoCoMo: `bench.turn_vectors` embeds the turns and questions, in whatever virtualenv
has that model, into an .npz file; this module serves those vectors to the real search path.
The keyword half, the fusion and every lift are memstrata's own; only the vector half changes.

The vector half searched here is exact cosine over the conversation's turns, as the store's own
search is exact for a project of this size (the coarse search starts far above a LoCoMo
conversation's few hundred turns).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from memory_core.domain.models import Layer, VectorMatch
from memory_core.embeddings.lazy import LazyEmbedder
from memory_core.ports.memories import VectorIndex
from memory_core.services.indexing import Indexer

__all__ = ["TurnVectors", "precomputed_indexer", "question_key"]


def question_key(text: str) -> str:
    """A question as looked up: the search path trims it, so spaces must not matter."""
    return " ".join(text.split())


@dataclasses.dataclass(frozen=True)
class TurnVectors:
    """Unit vectors of each turn (by LoCoMo id) and of each question (by its text)."""

    model: str
    turns: dict[str, npt.NDArray[np.float32]]
    questions: dict[str, npt.NDArray[np.float32]]

    @classmethod
    def load(cls, path: Path) -> TurnVectors:
        with np.load(path) as data:
            turn_ids = [str(t) for t in data["turn_ids"]]
            questions = [question_key(str(q)) for q in data["questions"]]
            passages = _unit(np.asarray(data["passages"], dtype=np.float32))
            queries = _unit(np.asarray(data["queries"], dtype=np.float32))
            model = str(data["model"])
        if passages.shape[0] != len(turn_ids) or queries.shape[0] != len(questions):
            raise SystemExit(f"{path}: the vectors do not match the turns and questions listed")
        return cls(
            model=model,
            turns=dict(zip(turn_ids, passages, strict=True)),
            questions=dict(zip(questions, queries, strict=True)),
        )


def _unit(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (rows / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


class _QuestionLookup:
    """An Embedder that answers each benchmark question with its precomputed vector."""

    def __init__(self, vectors: TurnVectors) -> None:
        self._questions = vectors.questions
        self.model_id = vectors.model
        self.dims = int(next(iter(vectors.questions.values())).shape[0])

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        try:
            return np.stack([self._questions[question_key(t)] for t in texts])
        except KeyError as exc:
            raise SystemExit(f"no precomputed vector for the question {exc}") from None


class _ExactTurnIndex:
    """`search_vectors` by exact cosine over each project's memories' precomputed vectors."""

    def __init__(self, rows: dict[str, tuple[list[int], npt.NDArray[np.float32]]]) -> None:
        self._rows = rows

    async def search_vectors(
        self, project: str, vector: npt.NDArray[np.float32], *, layer: Layer | None, limit: int
    ) -> list[VectorMatch]:
        # `layer` is never set: every LoCoMo turn is one episodic memory.
        ids, matrix = self._rows[project]
        cosines = matrix @ vector
        order = np.argsort(-cosines, kind="stable")[:limit]
        return [VectorMatch(id=ids[i], distance=float(1.0 - cosines[i])) for i in order]


async def precomputed_indexer(
    indexer: Indexer,
    vectors: TurnVectors,
    turns_of: dict[int, list[str]],
    project_of: dict[str, str],
) -> Indexer:
    """`indexer` with its vector half answered from `vectors`.

    `turns_of` maps each memory id to the turns it stores (identical text in one conversation
    is one memory: its first turn's vector stands for it); `project_of` maps a turn to its
    project.
    """
    by_project: dict[str, tuple[list[int], list[npt.NDArray[np.float32]]]] = {}
    for memory_id, turn_ids in turns_of.items():
        ids, rows = by_project.setdefault(project_of[turn_ids[0]], ([], []))
        ids.append(memory_id)
        rows.append(vectors.turns[turn_ids[0]])
    index = _ExactTurnIndex({p: (ids, np.stack(rows)) for p, (ids, rows) in by_project.items()})
    lookup = _QuestionLookup(vectors)
    source = LazyEmbedder(lambda: lookup, model_id=lookup.model_id, dims=lookup.dims)
    source.start()
    await source.wait()  # loaded before the first search, which must not fall back to keywords
    # Only search_vectors is ever called on this index: the store is built before the swap.
    return dataclasses.replace(indexer, vectors=cast(VectorIndex, index), source=source)
