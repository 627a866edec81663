"""SqliteVectorIndex.any_close: the batch pass that rules out look-alikes before a write."""

import aiosqlite
import numpy as np
import pytest

from memory_core.domain.models import Layer
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, SqliteVectorIndex
from tests.fakes import FakeEmbedder
from tests.storage.test_coarse_bits import add, put

FAKE = FakeEmbedder()
TEXTS = [
    f"note {i} about the {w} review and {v} plans"
    for i, (w, v) in enumerate(
        [("deploy", "budget"), ("garden", "holiday"), ("server", "kitchen"), ("piano", "travel")]
        * 5
    )
]


@pytest.mark.parametrize("exact_max", [0, 1000], ids=["coarse", "exact"])
async def test_agrees_with_searching_each_vector(db: aiosqlite.Connection, exact_max: int) -> None:
    index = SqliteVectorIndex(SqliteSession(db), exact_max=exact_max)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    rows = [await add(repo, text) for text in TEXTS]
    rows.append(await add(repo, "a procedural rule on commits", layer=Layer.PROCEDURAL))
    await put(index, *rows)
    queries = [*TEXTS[:3], "unrelated words entirely", "a procedural rule on commits"]
    vectors = FAKE.embed(queries)
    for floor in (0.3, 0.65, 0.9):
        close = await index.any_close(
            "p", Layer.EPISODIC, list(vectors), min_similarity=floor, neighbours=5
        )
        for vector, near in zip(vectors, close, strict=True):
            found = await index.search_vectors("p", vector, layer=Layer.EPISODIC, limit=5)
            # Never a miss: whatever one search finds that close, the batch pass saw too.
            if any(1.0 - m.distance >= floor for m in found):
                assert near
    exact = await index.any_close(
        "p", Layer.EPISODIC, list(vectors), min_similarity=0.99, neighbours=5
    )
    # A stored text is as close as can be; the rule lives in another layer.
    assert exact == [True, True, True, False, False]
    assert await index.any_close("p", None, [vectors[-1]], min_similarity=0.99, neighbours=5) == [
        True
    ]
    assert await index.any_close(
        "empty", Layer.EPISODIC, [vectors[0]], min_similarity=0.5, neighbours=5
    ) == [False]
    assert await index.any_close("p", Layer.EPISODIC, [], min_similarity=0.5, neighbours=5) == []
    assert np.isfinite(vectors).all()
