"""The in-memory coarse pass of large projects (SQLite): fresh after any writer's commit."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiosqlite
import numpy as np
import pytest
from structlog.testing import capture_logs

from memory_core.config.policies import TierPolicy
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, Memory, MemoryDraft
from memory_core.domain.tiers import tier_cutoffs
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, SqliteVectorIndex
from memory_core.storage.sqlite import vectors as vectors_module
from memory_core.storage.sqlite.connection import open_database
from memory_core.storage.sqlite.vectors import _bits, _CoarseBits
from server.settings import Settings
from tests.fakes import FakeEmbedder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAKE = FakeEmbedder()


async def add(
    repo: SqliteMemoryRepository, text: str, layer: Layer = Layer.EPISODIC, project: str = "p"
) -> Memory:
    draft = MemoryDraft(
        project=project, layer=layer, content=text, content_hash=content_hash(text), token_count=1
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


async def vec0_rows(db: aiosqlite.Connection) -> dict[str, int]:
    async with db.execute("SELECT project, count(*) FROM context_vectors GROUP BY project") as c:
        return {str(r[0]): int(r[1]) for r in await c.fetchall()}


async def coarse_listed(db: aiosqlite.Connection) -> set[str]:
    async with db.execute("SELECT project FROM vector_coarse_projects") as c:
        return {str(r[0]) for r in await c.fetchall()}


async def test_a_project_that_outgrows_exact_search_leaves_vec0(db: aiosqlite.Connection) -> None:
    index = SqliteVectorIndex(SqliteSession(db), exact_max=3)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    small = [await add(repo, f"small note {i}", project="small") for i in range(2)]
    grown = [await add(repo, f"tea note {i}", project="big") for i in range(3)]
    await put(index, *small, *grown)
    assert await vec0_rows(db) == {"small": 2, "big": 3}
    grown += [await add(repo, f"coffee note {i}", project="big") for i in range(2)]
    await put(index, *grown[3:])
    # Four rows past exact_max: no vec0 rows for it now, nor for its later vectors.
    assert await vec0_rows(db) == {"small": 2}
    assert await coarse_listed(db) == {"big"}
    later = await add(repo, "green tea", project="big")
    await put(index, later)
    assert await vec0_rows(db) == {"small": 2}
    # Its searches read the embeddings, so every vector is still found, nearest first.
    query = FAKE.embed(["coffee note 1"])[0]
    assert (await index.search_vectors("big", query, layer=None, limit=1))[0].id == grown[4].id
    # Shrunk below exact_max, it stays on the coarse path (exact at this size).
    await repo.delete("big", [m.id for m in grown])
    hits = await index.search_vectors("big", query, layer=None, limit=5)
    assert [h.id for h in hits] == [later.id]
    small_hits = await index.search_vectors("small", query, layer=None, limit=5)
    assert sorted(h.id for h in small_hits) == sorted(m.id for m in small)


async def test_an_older_store_moves_its_large_projects_out_of_vec0(
    db: aiosqlite.Connection,
) -> None:
    """Stores written when vec0 held every project are rebuilt once, on open."""
    before = SqliteVectorIndex(SqliteSession(db), exact_max=100)
    await before.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    big = [await add(repo, f"tea note {i}", project="big") for i in range(5)]
    small = [await add(repo, f"small note {i}", project="small") for i in range(2)]
    await put(before, *big, *small)
    await db.execute("DROP TABLE vector_coarse_projects")
    await db.execute("DELETE FROM meta WHERE key = 'vec0_large_projects'")
    await db.commit()
    assert await vec0_rows(db) == {"big": 5, "small": 2}
    after = SqliteVectorIndex(SqliteSession(db), exact_max=3)
    with capture_logs() as logs:
        await after.ensure_model(FAKE.model_id, FAKE.dims)
    assert [e["projects"] for e in logs if e["event"] == "vectors.large_projects_moved"] == [1]
    assert await vec0_rows(db) == {"small": 2}
    assert await coarse_listed(db) == {"big"}
    query = FAKE.embed(["tea note 2"])[0]
    assert (await after.search_vectors("big", query, layer=None, limit=1))[0].id == big[2].id
    assert (await after.search_vectors("small", query, layer=None, limit=5)) != []
    # Deletes still drop vectors through the rebuilt trigger, and a reopen changes nothing.
    assert await repo.delete("small", [small[0].id]) == 1
    assert await vec0_rows(db) == {"small": 1}
    await SqliteVectorIndex(SqliteSession(db), exact_max=3).ensure_model(FAKE.model_id, FAKE.dims)
    assert await vec0_rows(db) == {"small": 1} and await after.vector_stats() == (6, 0)


def test_reserved_room_is_used_without_reallocating() -> None:
    coarse = _CoarseBits(8, version=0)
    rows = np.random.default_rng(3).integers(0, 256, size=(90, 8), dtype=np.uint8)
    coarse.add(list(range(1, 11)), ["episodic"] * 10, rows[:10].tobytes())
    coarse.reserve(100)
    words = coarse._words
    coarse.add(list(range(11, 91)), ["episodic"] * 80, rows[10:].tobytes())
    assert coarse._words is words and coarse.size == 90
    for row_id in (5, 77):
        assert coarse.nearest(rows[row_id - 1].tobytes(), None, 1) == [row_id]


async def test_re_embedding_a_small_project_does_not_list_it(db: aiosqlite.Connection) -> None:
    """The cached size counts every vector stored; listing recounts the rows first."""
    index = SqliteVectorIndex(SqliteSession(db), exact_max=10)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    repo = SqliteMemoryRepository(SqliteSession(db))
    rows = [await add(repo, f"tea note {i}") for i in range(8)]
    for _ in range(3):  # a reindex, or upserts, within the cache's lifetime
        await put(index, *rows)
    assert await coarse_listed(db) == set()
    assert await vec0_rows(db) == {"p": 8}


def test_int8_narrowing_keeps_the_nearest_by_cosine() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((400, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    precise = _CoarseBits(6, version=0, dims=48)
    plain = _CoarseBits(6, version=0)
    for coarse in (precise, plain):
        coarse.add(list(range(1, 401)), ["episodic"] * 400, _bits(list(vectors)), vectors.tobytes())
    query = vectors[10] + 0.3 * rng.standard_normal(48).astype(np.float32)
    query /= np.linalg.norm(query)
    every = plain.candidates(query, None, 400, 20)
    assert every == list(range(1, 401))  # no copy: every coarse candidate is rescored
    kept = precise.candidates(query, None, 400, 20)
    exact = {int(i) + 1 for i in np.argsort(-(vectors @ query))[:20]}
    assert len(kept) == 20 and len(exact & set(kept)) >= 19  # int8 rounding may swap the 20th
    assert set(np.argsort(-(vectors @ query))[:10] + 1) <= set(kept)
    assert precise.candidates(query, "working", 400, 20) == []


async def big_project(
    db: aiosqlite.Connection, *, seed: int
) -> tuple[SqliteMemoryRepository, SqliteVectorIndex]:
    """320 rows of a project on the coarse path, with their vectors (and the int8 copy)."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    words = ["tea", "budget", "review", "morning", "deploy", "staging", "green", "note", "plan"]
    rng = np.random.default_rng(seed)
    rows = [
        await add(repo, " ".join(rng.choice(words, size=4)) + f" {i}", project="big")
        for i in range(320)
    ]
    index = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    await index.ensure_model(FAKE.model_id, FAKE.dims)
    await put(index, *rows)
    return repo, index


async def test_narrowed_rescoring_returns_what_rescoring_every_candidate_returns(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The int8 copy only chooses which rows the exact rescore reads (issue 21)."""
    _, narrowed = await big_project(db, seed=8)
    monkeypatch.setattr(vectors_module, "PRECISE_MAX_ROWS", 0)
    every = SqliteVectorIndex(SqliteSession(db), exact_max=0)
    for text in ("tea budget", "morning deploy plan", "green note 7", "review"):
        query = FAKE.embed([text])[0]
        full = await every.search_vectors("big", query, layer=None, limit=10)
        monkeypatch.setattr(vectors_module, "PRECISE_MAX_ROWS", 250_000)
        fast = await narrowed.search_vectors("big", query, layer=None, limit=10)
        monkeypatch.setattr(vectors_module, "PRECISE_MAX_ROWS", 0)
        assert [(h.id, h.distance) for h in fast] == [(h.id, h.distance) for h in full]
    assert narrowed._coarse["big"].dims == FAKE.dims  # the copy was used...
    assert every._coarse["big"].dims is None  # ...and the other index had none


def _spread_rows(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    """Unit rows at cosines to a few topics spread over 0-1, as a store's texts lie."""
    topics = rng.standard_normal((5, dims)).astype(np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    noise = rng.standard_normal((n, dims)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    share = rng.uniform(0, 1, (n, 1)).astype(np.float32)
    rows = share * topics[rng.integers(0, 5, n)] + np.sqrt(1 - share**2) * noise
    rows[::7, 0] *= 40  # a dominant component: a coarse int8 scale, so a wide bound
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_int8_bound_keeps_every_row_that_may_be_among_the_nearest(seed: int) -> None:
    """Rows left out by the bound cannot be among the `wanted` nearest by exact cosine."""
    rng = np.random.default_rng(seed)
    vectors = _spread_rows(rng, 3000, 384)
    coarse = _CoarseBits(48, version=0, dims=384)
    coarse.add(list(range(1, 3001)), ["episodic"] * 3000, _bits(list(vectors)), vectors.tobytes())
    narrowed = 0
    for n in range(20):
        query = vectors[n * 37] + rng.standard_normal(384).astype(np.float32) / 20
        query /= np.linalg.norm(query)
        rows = np.arange(3000)
        approx = (coarse._int8[rows].astype(np.float32) @ query) * coarse._scale[rows]
        reach = vectors_module._reachable(approx, coarse._scale[rows], query, 50)
        exact = vectors @ query
        assert set(np.argsort(-exact)[:50].tolist()) <= set(reach.tolist())
        narrowed += reach.size
        # Through `candidates`: the exact top 20 of the coarse candidates, in fewer rows.
        ids = coarse.candidates(query, None, 300, 100, 20)
        pool = np.array(coarse.nearest(_bits([query]), None, 300)) - 1
        best = pool[np.argsort(-(vectors[pool] @ query))[:20]] + 1
        assert set(best.tolist()) <= set(ids) and len(ids) < 100
    assert narrowed < 20 * 3000 // 4  # the bound leaves most rows out


def test_the_int8_bound_gives_way_to_the_cap_when_it_keeps_too_many() -> None:
    """Rows too alike to tell apart by their int8 copy: the `keep` best by it, as before."""
    rng = np.random.default_rng(4)
    base = rng.standard_normal(48).astype(np.float32)
    vectors = base + 1e-4 * rng.standard_normal((400, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    coarse = _CoarseBits(6, version=0, dims=48)
    coarse.add(list(range(1, 401)), ["episodic"] * 400, _bits(list(vectors)), vectors.tobytes())
    assert len(coarse.candidates(vectors[0], None, 400, 30, 10)) == 30


async def test_rows_deleted_where_the_bound_narrowed_do_not_cost_a_search_its_hits(
    db: aiosqlite.Connection,
) -> None:
    """Own deletes leave the bits stale; the rescore then reads every candidate the cap allows."""
    repo, index = await big_project(db, seed=9)
    query = FAKE.embed(["morning deploy plan"])[0]
    assert len(await index.search_vectors("big", query, layer=None, limit=10)) == 10
    narrowed = index._coarse["big"].candidates(query, None, 200, 100, 10)
    assert 10 <= len(narrowed) < 100  # the bound narrowed...
    await repo.delete("big", narrowed)  # ...to rows now gone (data_version stays put)
    hits = await index.search_vectors("big", query, layer=None, limit=10)
    assert len(hits) == 10 and not {h.id for h in hits} & set(narrowed)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
