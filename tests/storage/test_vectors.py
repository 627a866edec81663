"""Contract tests of the VectorIndex port (parametrized over backends by the storage fixture)."""

from datetime import UTC, datetime

import numpy as np
import pytest

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, Memory, MemoryDraft
from memory_core.errors import SchemaMismatchError
from memory_core.ports import MemoryRepository, VectorIndex
from tests.backends import StorageUnderTest
from tests.fakes import FakeEmbedder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAKE = FakeEmbedder()


@pytest.fixture
async def vectors(storage: StorageUnderTest) -> VectorIndex:
    index = storage.vectors()
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    return index


async def add(repo: MemoryRepository, text: str, project: str = "p", layer=Layer.EPISODIC):
    draft = MemoryDraft(
        project=project, layer=layer, content=text, content_hash=content_hash(text), token_count=1
    )
    return (await repo.add(draft, T0)).memory


async def put(vectors: VectorIndex, *memories: Memory) -> None:
    embedded = FAKE.embed([m.content for m in memories])
    await vectors.put_vectors(
        [(m, content_hash(m.content), embedded[i]) for i, m in enumerate(memories)]
    )


async def test_model_is_recorded_and_another_is_refused(
    vectors: VectorIndex,
) -> None:
    await vectors.ensure_model(FAKE.model_id, FAKE.dims)  # same model: fine
    with pytest.raises(SchemaMismatchError, match="memstrata reindex"):
        await vectors.ensure_model("other-model", FAKE.dims)
    with pytest.raises(SchemaMismatchError, match="16 dims"):
        await vectors.ensure_model(FAKE.model_id, 16)
    await vectors.reset_model("other-model", 16)
    await vectors.ensure_model("other-model", 16)


async def test_search_is_scoped_to_a_project_and_layer(
    repo: MemoryRepository, vectors: VectorIndex
) -> None:
    tea = await add(repo, "green tea in the morning")
    coffee = await add(repo, "black coffee at night", layer=Layer.WORKING)
    other = await add(repo, "green tea in the morning", project="q")
    await put(vectors, tea, coffee, other)
    query = FAKE.embed(["green tea"])[0]
    hits = await vectors.search_vectors("p", query, layer=None, limit=5)
    assert [h.id for h in hits] == [tea.id, coffee.id]
    assert hits[0].distance < hits[1].distance
    assert [
        h.id for h in await vectors.search_vectors("p", query, layer=Layer.WORKING, limit=5)
    ] == [coffee.id]
    assert [h.id for h in await vectors.search_vectors("q", query, layer=None, limit=5)] == [
        other.id
    ]


async def test_coarse_path_agrees_with_exact_search(
    repo: MemoryRepository, storage: StorageUnderTest
) -> None:
    exact = storage.vectors()
    coarse = storage.vectors(exact_max=0)
    await exact.ensure_model(FAKE.model_id, FAKE.dims)
    rows = [await add(repo, f"note {i} about topic {i % 7} and {i % 11}") for i in range(60)]
    await put(exact, *rows)
    query = FAKE.embed(["note about topic 3 and 5"])[0]
    a = await exact.search_vectors("p", query, layer=None, limit=5)
    b = await coarse.search_vectors("p", query, layer=None, limit=5)
    assert [h.id for h in a] == [h.id for h in b]
    assert np.allclose([h.distance for h in a], [h.distance for h in b], atol=1e-5)


async def test_vectors_follow_deletes_and_rewrites(
    repo: MemoryRepository, vectors: VectorIndex
) -> None:
    a = await add(repo, "alpha")
    b = await add(repo, "beta")
    await put(vectors, a, b)
    assert await vectors.vector_stats() == (2, 0)
    await repo.delete("p", [a.id])
    assert await vectors.vector_stats() == (1, 0)
    query = FAKE.embed(["alpha"])[0]
    assert [h.id for h in await vectors.search_vectors("p", query, layer=None, limit=5)] == [b.id]
    key_draft = MemoryDraft(
        project="p",
        layer=Layer.SEMANTIC,
        key="k",
        content="v1",
        content_hash=content_hash("v1"),
        token_count=1,
    )
    keyed = (await repo.add(key_draft, T0)).memory
    await put(vectors, keyed)
    rewritten = key_draft.model_copy(update={"content": "v2", "content_hash": content_hash("v2")})
    await repo.add(rewritten, T0)
    assert [m.id for m in await vectors.missing_vectors(limit=10)] == [keyed.id]


async def test_vectors_are_found_by_text_hash(repo: MemoryRepository, vectors: VectorIndex) -> None:
    a = await add(repo, "shared text")
    await put(vectors, a)
    found = await vectors.vectors_by_hash([content_hash("shared text"), "nope"])
    assert list(found) == [content_hash("shared text")]
    assert np.allclose(found[content_hash("shared text")], FAKE.embed(["shared text"])[0])


async def test_vectors_of_deleted_rows_are_skipped(
    repo: MemoryRepository, vectors: VectorIndex
) -> None:
    a = await add(repo, "gone soon")
    await repo.delete("p", [a.id])
    await put(vectors, a)
    assert await vectors.vector_stats() == (0, 0)
