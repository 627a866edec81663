"""bench.locomo --vectors: another model's vectors answer the vector half of the real search."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from bench.precomputed_vectors import TurnVectors, precomputed_indexer
from memory_core.domain.models import Layer, SearchMode
from memory_core.ports import MemoryRepository, VectorIndex
from memory_core.services.indexing import Indexer
from memory_core.services.memories import SearchRequest
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock, ready_fake
from tests.services.test_semantic import make_service


def write_vectors(path: Path, passages: list[list[float]], queries: list[list[float]]) -> None:
    np.savez(
        path,
        model=np.array("test-model"),
        turn_ids=np.array([f"t{n}" for n in range(len(passages))]),
        passages=np.array(passages, dtype=np.float32),
        questions=np.array([f"question  {n} " for n in range(len(queries))]),
        queries=np.array(queries, dtype=np.float32),
    )


def test_load_makes_unit_vectors_and_keys_questions_by_their_words(tmp_path: Path) -> None:
    write_vectors(tmp_path / "v.npz", [[3.0, 4.0], [0.0, 2.0]], [[0.0, 5.0]])
    vectors = TurnVectors.load(tmp_path / "v.npz")
    assert vectors.model == "test-model"
    assert vectors.turns["t0"] == pytest.approx([0.6, 0.8])
    assert vectors.questions["question 0"] == pytest.approx([0.0, 1.0])


def test_load_refuses_vectors_that_do_not_match_their_lists(tmp_path: Path) -> None:
    np.savez(
        tmp_path / "v.npz",
        model=np.array("m"),
        turn_ids=np.array(["t0", "t1"]),
        passages=np.ones((1, 2), dtype=np.float32),
        questions=np.array(["q"]),
        queries=np.ones((1, 2), dtype=np.float32),
    )
    with pytest.raises(SystemExit, match="do not match"):
        TurnVectors.load(tmp_path / "v.npz")


async def test_the_swapped_indexer_ranks_a_project_by_the_given_vectors(tmp_path: Path) -> None:
    # t0 and t1 are one memory (identical text): its first turn's vector stands for it.
    write_vectors(
        tmp_path / "v.npz",
        [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [1.0, 0.0]],
        [[0.0, 1.0]],
    )
    lazy, _ = ready_fake()
    indexer = await precomputed_indexer(
        Indexer(vectors=cast(VectorIndex, object()), source=lazy),
        TurnVectors.load(tmp_path / "v.npz"),
        {10: ["t0", "t1"], 11: ["t2"], 12: ["t3"]},
        {"t0": "a", "t1": "a", "t2": "a", "t3": "b"},
    )
    query = await indexer.embed_query(" question 0")
    assert query is not None and query == pytest.approx([0.0, 1.0])
    found = await indexer.vectors.search_vectors("a", query, layer=None, limit=5)
    assert [m.id for m in found] == [11, 10]
    assert [m.distance for m in found] == pytest.approx([0.2, 1.0])
    with pytest.raises(SystemExit, match="no precomputed vector"):
        await indexer.embed_query("a question nobody embedded")


async def test_search_ranks_by_the_given_vectors_not_the_model(
    tmp_path: Path, repo: MemoryRepository, storage: StorageUnderTest, clock: FrozenClock
) -> None:
    lazy, _ = ready_fake()
    service = await make_service(storage, repo, clock, lazy)
    first = await service.append("p", Layer.EPISODIC, "question 0 asked here")
    second = await service.append("p", Layer.EPISODIC, "something else entirely")
    # The fake model puts the memory sharing the question's words first; the given vectors
    # put the other one first.
    write_vectors(tmp_path / "v.npz", [[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0]])
    assert service.indexer is not None
    swapped = dataclasses.replace(
        service,
        indexer=await precomputed_indexer(
            service.indexer,
            TurnVectors.load(tmp_path / "v.npz"),
            {first.outcome.memory.id: ["t0"], second.outcome.memory.id: ["t1"]},
            {"t0": "p", "t1": "p"},
        ),
    )
    request = SearchRequest(project="p", query="question 0", mode=SearchMode.SEMANTIC)
    assert (await service.search(request)).hits[0].memory.id == first.outcome.memory.id
    assert (await swapped.search(request)).hits[0].memory.id == second.outcome.memory.id
