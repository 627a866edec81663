"""The in-memory coarse pass of large projects (SQLite): fresh after any writer's commit."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiosqlite
import numpy as np
import pytest

from memory_core.config import TierPolicy
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, Memory, MemoryDraft
from memory_core.domain.tiers import tier_cutoffs
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, SqliteVectorIndex
from memory_core.storage.sqlite.connection import open_database
from memory_core.storage.sqlite.vectors import _bits, _CoarseBits
from server.settings import Settings
from tests.fakes import FakeEmbedder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAKE = FakeEmbedder()


async def add(repo: SqliteMemoryRepository, text: str, layer: Layer = Layer.EPISODIC) -> Memory:
    draft = MemoryDraft(
        project="p", layer=layer, content=text, content_hash=content_hash(text), token_count=1
    )
    return (await repo.add(draft, T0)).memory


async def put(index: SqliteVectorIndex, *rows: Memory) -> None:
    vectors = FAKE.embed([m.content for m in rows])
    await index.put_vectors([(m, m.content_hash, v) for m, v in zip(rows, vectors, strict=True)])


@pytest.fixture
async def second(
    settings: Settings, db: aiosqlite.Connection
) -> AsyncIterator[aiosqlite.Connection]:
    """Another connection to the same file: another server process, as far as SQLite knows."""
    conn = await open_database(settings.db)
    yield conn
    await conn.close()


async def test_rows_other_connections_write_are_found(
    db: aiosqlite.Connection, second: aiosqlite.Connection
) -> None:
    mine = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    theirs = SqliteVectorIndex(SqliteSession(second), exact_max=0)
    await mine.ensure_model(FAKE.model_id, FAKE.dims)
    repo, their_repo = (
        SqliteMemoryRepository(SqliteSession(db)),
        SqliteMemoryRepository(SqliteSession(second)),
    )
    tea = await add(repo, "green tea in the morning")
    await put(mine, tea)
    query = FAKE.embed(["quarterly budget review"])[0]
    assert [h.id for h in await mine.search_vectors("p", query, layer=None, limit=1)] == [tea.id]
    budget = await add(their_repo, "quarterly budget review")
    await put(theirs, budget)
    assert [h.id for h in await mine.search_vectors("p", query, layer=None, limit=1)] == [budget.id]
    await their_repo.delete("p", [budget.id])
    assert [h.id for h in await mine.search_vectors("p", query, layer=None, limit=1)] == [tea.id]


async def test_own_backfill_of_older_rows_is_found(db: aiosqlite.Connection) -> None:
    index = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    old = await add(repo, "quarterly budget review")  # no vector yet: the model was loading
    new = await add(repo, "green tea in the morning")
    await put(index, new)
    query = FAKE.embed(["quarterly budget review"])[0]
    assert [h.id for h in await index.search_vectors("p", query, layer=None, limit=1)] == [new.id]
    await put(index, old)  # the backfill: an id below every id already loaded
    assert [h.id for h in await index.search_vectors("p", query, layer=None, limit=1)] == [old.id]


async def test_layer_filter_applies_to_the_coarse_pass(db: aiosqlite.Connection) -> None:
    index = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    rows = [await add(repo, f"tea note {i}") for i in range(5)]
    rule = await add(repo, "tea rule", layer=Layer.WORKING)
    await put(index, *rows, rule)
    query = FAKE.embed(["tea note 1"])[0]
    hits = await index.search_vectors("p", query, layer=Layer.WORKING, limit=5)
    assert [h.id for h in hits] == [rule.id]
    assert await index.search_vectors("p", query, layer=Layer.PROCEDURAL, limit=5) == []


def test_numpy_bits_match_sqlite_vec_quantisation() -> None:
    # Checked against vec_quantize_binary in the store tests above; here the layout: bit i
    # of byte j is dimension 8j+i.
    vector = np.zeros(64, dtype=np.float32)
    vector[[0, 9, 63]] = 1.0
    assert _bits([vector]) == bytes([1, 2, 0, 0, 0, 0, 0, 128])


def test_hamming_nearest_for_any_word_width() -> None:
    for nbytes in (4, 6, 8, 48):
        coarse = _CoarseBits(nbytes, version=0)
        rng = np.random.default_rng(nbytes)
        rows = rng.integers(0, 256, size=(50, nbytes), dtype=np.uint8)
        coarse.add(list(range(1, 51)), ["episodic"] * 50, rows.tobytes())
        query = rows[17].copy()
        query[0] ^= 1  # one bit away from row id 18
        assert coarse.nearest(query.tobytes(), None, 1) == [18]
        expected = np.unpackbits(rows ^ query, axis=1).sum(axis=1)
        best5 = coarse.nearest(query.tobytes(), "episodic", 5)
        assert sorted(expected[[i - 1 for i in best5]]) == sorted(expected)[:5]


async def test_a_legacy_bit_table_is_dropped_and_deletes_still_work(
    db: aiosqlite.Connection,
) -> None:
    """Stores written before the coarse pass moved to memory have a vec0 bit table."""
    for statement in (
        "CREATE VIRTUAL TABLE context_vectors_bit USING vec0("
        " id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, layer TEXT, embedding BIT[32])",
        "CREATE VIRTUAL TABLE context_vectors USING vec0("
        " id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, layer TEXT,"
        " embedding FLOAT[32] distance_metric=cosine)",
        "CREATE TRIGGER context_vectors_ad AFTER DELETE ON context_embeddings"
        " BEGIN DELETE FROM context_vectors WHERE id = old.id;"
        " DELETE FROM context_vectors_bit WHERE id = old.id; END",
    ):
        await db.execute(statement)
    await db.commit()
    index = SqliteVectorIndex(SqliteSession(db))
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    async with db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'context_vectors%'") as c:
        names = {r[0] for r in await c.fetchall()}
    assert "context_vectors_bit" not in names and "context_vectors_ad" in names
    repo = SqliteMemoryRepository(SqliteSession(db))
    tea = await add(repo, "green tea")
    await put(index, tea)
    assert await repo.delete("p", [tea.id]) == 1
    assert await index.vector_stats() == (0, 0)


async def test_pruned_rows_lose_their_vectors(db: aiosqlite.Connection) -> None:
    index = SqliteVectorIndex(SqliteSession(db))
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    old, kept = await add(repo, "old tea note"), await add(repo, "old coffee note")
    await put(index, old, kept)
    cutoffs = tier_cutoffs(T0 + timedelta(days=40), TierPolicy())
    await repo.hand_out("p", [kept.id], T0 + timedelta(days=39))  # used since: not expired
    assert await repo.delete_expired([old.id, kept.id], cutoffs) == [old.id]
    assert await index.vector_stats() == (1, 0)
    query = FAKE.embed(["old tea note"])[0]
    assert [h.id for h in await index.search_vectors("p", query, layer=None, limit=5)] == [kept.id]


async def test_own_deletes_drop_stale_bits_and_new_rows_are_found(db: aiosqlite.Connection) -> None:
    index = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    # More near-duplicates of the query than the coarse pass keeps as candidates.
    stale = [await add(repo, f"quarterly budget review item {i}") for i in range(600)]
    await put(index, *stale)
    query = FAKE.embed(["quarterly budget review"])[0]
    assert len(await index.search_vectors("p", query, layer=None, limit=5)) == 5
    await repo.delete("p", [m.id for m in stale])  # this connection: data_version stays put
    fresh = await add(repo, "budget")
    await put(index, fresh)
    await index.search_vectors("p", query, layer=None, limit=5)  # notices the stale bits
    hits = await index.search_vectors("p", query, layer=None, limit=5)
    assert [h.id for h in hits] == [fresh.id]
