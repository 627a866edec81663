"""SqliteVectorIndex.any_close: the batch pass that rules out look-alikes before a write."""

import aiosqlite
import numpy as np
import pytest

from memory_core.domain.models import Layer
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, SqliteVectorIndex
from memory_core.storage.sqlite import vectors as vectors_module
from tests.fakes import FakeEmbedder
from tests.storage.test_coarse_bits import add, put

FAKE = FakeEmbedder()


class WideEmbedder(FakeEmbedder):
    """FakeEmbedder's bag of words in MiniLM's 384 dimensions, where sign bits say much more."""

    model_id = "fake-bow-384"
    dims = 384


WIDE = WideEmbedder()
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


async def test_a_project_without_the_int8_copy_probes_its_lists(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Too large for the int8 copy (here: any size), a batch is checked through SignLists.

    Not certain as the int8 path is: probing every list and rescoring as many rows as a
    search does, it decides exactly as a search per text; with the lists it probes in
    production, it misses few look-alikes (the 1M bench measures it on MiniLM vectors).
    """
    monkeypatch.setattr(vectors_module, "PRECISE_MAX_ROWS", 0)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(words, size=6)) for _ in range(1500)]
    repo = SqliteMemoryRepository(SqliteSession(db))
    index = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await index.ensure_model(WIDE.model_id, WIDE.dims)
    rows = [await add(repo, text) for text in texts]
    await index.put_vectors(
        [(m, m.content_hash, v) for m, v in zip(rows, WIDE.embed(texts), strict=True)]
    )
    # One word of a stored text changed (close), two changed (about the floor), none shared.
    edited = [" ".join([*t.split()[:5], "w299"]) for t in texts[:40]]
    halved = [" ".join([*t.split()[:4], "w298", "w299"]) for t in texts[40:80]]
    fresh = [" ".join(rng.choice(words, size=6)) for _ in range(40)]
    vectors = list(WIDE.embed(edited + halved + fresh))

    async def batch() -> list[bool]:
        return await index.any_close(
            "p", Layer.EPISODIC, vectors, min_similarity=0.65, neighbours=5
        )

    searched = [
        any(
            1.0 - m.distance >= 0.65
            for m in await index.search_vectors("p", v, layer=Layer.EPISODIC, limit=5)
        )
        for v in vectors
    ]
    assert sum(searched[:40]) == 40 and 0 < sum(searched[40:]) < 40  # both kinds are asked
    close = await batch()
    assert index._coarse["p"].lists is not None  # the lists were used
    # 1 of 120 differs here probing 16 of 64 lists, 3 probing 8 (lists of ~23 rows split
    # near texts more often than larger ones do); lists at random miss most of the ~45.
    assert sum(c != s for c, s in zip(close, searched, strict=True)) <= 6
    # A reload of the bits files the rows again under the same centres, and decides alike.
    centres = index._coarse["p"].lists.centres
    index._coarse.pop("p")
    assert await batch() == close
    assert index._coarse["p"].lists.centres is centres
    monkeypatch.setattr(vectors_module, "LISTS_PROBED", 64)  # every list
    monkeypatch.setattr(vectors_module, "LISTED_RESCORE", 200)  # as many as a search rescores
    assert await batch() == searched
    # The other layer's rows are never candidates.
    assert (
        await index.any_close("p", Layer.SEMANTIC, vectors[:3], min_similarity=0.3, neighbours=5)
        == [False] * 3
    )
