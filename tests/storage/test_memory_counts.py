"""The kept counters behind get_memory_stats (migration 0006) against a full recount.

A seeded random sequence of every kind of write (appends, batches with old creation times,
access tracking, deletes, trims, compaction, recalculation, pruning, concurrent writers,
imports with arbitrary stored tiers, copy-store) runs on each backend; after each step the
stats the repository answers from its counters equal the stats recomputed from every row,
and the counters equal a GROUP BY over the table.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite
import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, Memory, MemoryDraft, StoreStats, Tier
from memory_core.domain.tiers import classify_tier, tier_cutoffs
from memory_core.ports import MemoryRepository
from memory_core.ports.transfer import CopyEndpoint
from memory_core.services.copy_store import copy_store
from memory_core.services.transfer import memory_row
from memory_core.storage.migrations import load_migrations
from memory_core.storage.postgres import PostgresSession, PostgresStore
from memory_core.storage.postgres.copy import PostgresCopyEndpoint
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.copy import SqliteCopyEndpoint
from memory_core.storage.sqlite.migrate import default_migrations_dir
from memory_core.storage.sqlite.rows import encode_time
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer
from tests.backends import PostgresUnderTest, SqliteUnderTest, StorageUnderTest

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = TierPolicy()
PROJECTS = ("p", "q")
# Multi-byte text, so byte counts and character counts differ.
WORDS = ("alpha", "beta", "gamma", "délta", "ε", "日本", "zeta", "eta")


async def all_rows(repo: MemoryRepository, project: str) -> list[Memory]:
    rows: list[Memory] = []
    for layer in Layer:
        rows.extend(await repo.list_layer(project, layer, None, newest_first=False))
    return rows


def recount(project: str, rows: list[Memory], now: datetime) -> dict[str, object]:
    """What stats must say, computed from every row."""
    cutoffs = tier_cutoffs(now, POLICY)
    by_tier = dict.fromkeys(Tier, 0)
    by_layer = dict.fromkeys(Layer, 0)
    stale = 0
    for m in rows:
        live = classify_tier(m.last_accessed or m.created_at, cutoffs)
        by_tier[live] += 1
        by_layer[m.layer] += 1
        stale += live is not m.tier
    created = [m.created_at for m in rows]
    return {
        "total": len(rows),
        "by_tier": by_tier,
        "by_layer": by_layer,
        "content_bytes": sum(len(m.content.encode()) for m in rows),
        "stale_tiers": stale,
        "never_accessed": sum(m.access_count == 0 for m in rows),
        "oldest": min(created, default=None),
        "newest": max(created, default=None),
    }


def answered(stats: StoreStats) -> dict[str, object]:
    return {
        "total": stats.total,
        "by_tier": stats.by_tier,
        "by_layer": stats.by_layer,
        "content_bytes": stats.content_bytes,
        "stale_tiers": stats.stale_tiers,
        "never_accessed": stats.never_accessed,
        "oldest": stats.oldest,
        "newest": stats.newest,
    }


async def counters_match_table(storage: StorageUnderTest) -> None:
    """memory_counts (rows that are not zero) equals a GROUP BY over context_snapshots."""
    size = "length(CAST(content AS BLOB))" if storage.name == "sqlite" else "octet_length(content)"
    mismatches = await storage.fetchval(
        "SELECT count(*) FROM (SELECT project, layer, memory_tier, count(*) AS n,"
        f" sum({size}) AS b, sum(CASE WHEN access_count = 0 THEN 1 ELSE 0 END) AS u"
        " FROM context_snapshots GROUP BY 1, 2, 3) AS f"
        " FULL JOIN (SELECT * FROM memory_counts WHERE n <> 0 OR bytes <> 0) AS k"
        " USING (project, layer, memory_tier)"
        " WHERE f.n IS DISTINCT FROM k.n OR f.b IS DISTINCT FROM k.bytes"
        " OR f.u IS DISTINCT FROM k.never_accessed"
    )
    assert mismatches == 0


async def check(storage: StorageUnderTest, repo: MemoryRepository, now: datetime) -> None:
    await counters_match_table(storage)
    for project in PROJECTS:
        stats = await repo.stats(project, tier_cutoffs(now, POLICY))
        assert answered(stats) == recount(project, await all_rows(repo, project), now)


def random_draft(rng: random.Random, created: datetime | None = None) -> MemoryDraft:
    layer = rng.choice(list(Layer))
    content = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
    key = f"k{rng.randint(0, 5)}" if rng.random() < 0.3 else None
    return MemoryDraft(
        project=rng.choice(PROJECTS),
        layer=layer,
        content=content,
        content_hash=content_hash(content),
        token_count=1,
        key=key,
        session_id=rng.choice([None, "s1", "s2"]),
        created_at=created,
    )


async def random_write(
    rng: random.Random, repo: MemoryRepository, now: datetime, ids: list[int]
) -> None:
    """An append, a batch, access tracking, a delete, a trim or a compaction."""
    project = rng.choice(PROJECTS)
    op = rng.randrange(6)
    if op <= 1:
        ids.append((await repo.add(random_draft(rng), now)).memory.id)
    elif op == 2:
        # A batch with old creation times, as an import of dated notes makes.
        drafts = [
            random_draft(rng, now - timedelta(days=rng.uniform(0, 60)))
            for _ in range(rng.randint(1, 8))
        ]
        ids.extend(o.memory.id for o in await repo.add_many(drafts, now))
    elif op == 3 and ids:
        await repo.hand_out(project, rng.sample(ids, min(3, len(ids))), now)
    elif op == 4 and ids:
        await repo.delete(project, rng.sample(ids, min(2, len(ids))))
    elif op == 5 and ids:
        await repo.replace_with(
            project, rng.sample(ids, min(2, len(ids))), [random_draft(rng)], now
        )


async def random_maintenance(
    rng: random.Random, repo: MemoryRepository, now: datetime, ids: list[int]
) -> None:
    """A recalculation, a prune, a batched prune, a trim or a cleared layer."""
    project = rng.choice(PROJECTS)
    cutoffs = tier_cutoffs(now, POLICY)
    op = rng.randrange(5)
    if op == 0:
        await repo.recalculate_tiers(cutoffs, rng.choice([None, project]))
    elif op == 1:
        await repo.prune_expired(cutoffs, rng.choice([None, project]), limit=3, dry_run=False)
    elif op == 2 and ids:
        await repo.delete_expired(rng.sample(ids, min(4, len(ids))), cutoffs)
    elif op == 3:
        await repo.trim_session(project, Layer.WORKING, rng.choice([None, "s1"]), keep=1)
    elif rng.random() < 0.3:
        await repo.delete_layer(project, rng.choice([None, *Layer]))


async def random_step(
    rng: random.Random, repo: MemoryRepository, now: datetime, ids: list[int]
) -> None:
    step = random_write if rng.random() < 0.65 else random_maintenance
    await step(rng, repo, now, ids)


@pytest.mark.parametrize("seed", [1, 2])
async def test_kept_counts_equal_a_full_recount_after_random_writes(
    storage: StorageUnderTest, seed: int
) -> None:
    rng = random.Random(seed)
    repo = storage.repo()
    now = T0
    ids: list[int] = []
    for step in range(160):
        # Time mostly moves forward by minutes to weeks, so rows age across every boundary
        # between recalculations; now and then a writer's clock is behind (skew).
        now += timedelta(hours=rng.choice([0.1, 0.5, 2, 30, 24 * 8, 24 * 40]))
        if rng.random() < 0.05:
            now -= timedelta(hours=3)
        await random_step(rng, repo, now, ids)
        if step % 8 == 0:
            await check(storage, repo, now)
    # Stats asked later than the last write: tiers have moved since they were stored.
    for later in (timedelta(hours=2), timedelta(days=3), timedelta(days=45)):
        await check(storage, repo, now + later)


async def test_concurrent_writers_lose_no_count(storage: StorageUnderTest) -> None:
    repos = [storage.repo() for _ in range(4)]
    rng = random.Random(5)
    batches = [
        [random_draft(rng, T0 - timedelta(days=rng.uniform(0, 40))) for _ in range(12)]
        for _ in range(4)
    ]

    async def writer(repo: MemoryRepository, drafts: list[MemoryDraft]) -> None:
        for i, d in enumerate(drafts):
            out = await repo.add(d, T0)
            if i % 3 == 0:
                await repo.hand_out(d.project, [out.memory.id], T0)

    await asyncio.gather(*(writer(r, b) for r, b in zip(repos, batches, strict=True)))
    await asyncio.gather(
        repos[0].recalculate_tiers(tier_cutoffs(T0, POLICY), None),
        repos[1].add_many(batches[0] + batches[2], T0),
        repos[2].prune_expired(tier_cutoffs(T0, POLICY), "p", limit=None, dry_run=False),
    )
    await check(storage, repos[3], T0)


async def test_import_with_any_stored_tier_is_counted(tmp_path: Path) -> None:
    conn = await open_database(tmp_path / "import.db")
    await apply_migrations(conn)
    try:
        storage = SqliteUnderTest(conn)
        repo = storage.repo()
        now = T0 + timedelta(days=30)
        rng = random.Random(9)
        memories = []
        for i in range(1, 40):
            content = f"imported {i} {rng.choice(WORDS)}"
            created = T0 - timedelta(days=rng.uniform(0, 90))
            memories.append(
                Memory(
                    id=i,
                    project=rng.choice(PROJECTS),
                    layer=rng.choice(list(Layer)),
                    key=None,
                    content=content,
                    metadata={},
                    session_id=None,
                    created_at=created,
                    updated_at=created,
                    last_accessed=rng.choice([None, now - timedelta(minutes=5)]),
                    access_count=rng.choice([0, 0, 1, 7]),
                    # Exported tiers are whatever the source had stored: often not "as of now".
                    tier=rng.choice(list(Tier)),
                    content_hash=content_hash(content),
                    token_count=1,
                )
            )
        transfer = SqliteMemoryTransfer(SqliteSession(conn), tmp_path / "import.db")
        await transfer.insert_rows("memory", [memory_row(m) for m in memories], keep_ids=True)
        await check(storage, repo, now)
        await repo.recalculate_tiers(tier_cutoffs(now, POLICY), None)
        await check(storage, repo, now)
    finally:
        await conn.close()


@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
async def test_copy_store_target_counts_equal_the_source(
    db: aiosqlite.Connection, pg_store: PostgresStore, direction: str
) -> None:
    lite, pg = SqliteUnderTest(db), PostgresUnderTest(pg_store)
    source, target = (lite, pg) if direction == "sqlite->postgres" else (pg, lite)
    endpoints: dict[str, CopyEndpoint] = {
        "sqlite": SqliteCopyEndpoint(SqliteSession(db)),
        "postgres": PostgresCopyEndpoint(PostgresSession(pg_store.pool)),
    }
    rng = random.Random(11)
    repo = source.repo()
    now = T0
    ids: list[int] = []
    for _ in range(60):
        now += timedelta(hours=rng.choice([1, 30, 24 * 10]))
        await random_step(rng, repo, now, ids)
    report = await copy_store(endpoints[source.name], endpoints[target.name])
    assert report.verified and report.memories > 0
    await check(target, target.repo(), now)
    await check(source, repo, now)


async def test_upgrading_counts_the_stored_rows_never_read(tmp_path: Path) -> None:
    """Rows written before migration 0009 are counted by it, read or not."""
    folder = tmp_path / "sql"
    folder.mkdir()
    for migration in load_migrations(default_migrations_dir()):
        if migration.number < 9:
            (folder / f"{migration.name}.sql").write_text(migration.sql, encoding="utf-8")
    conn = await open_database(tmp_path / "old.db")
    try:
        await apply_migrations(conn, folder)
        storage = SqliteUnderTest(conn)
        repo = storage.repo()
        rng = random.Random(4)
        # Written with the columns schema 8 has (today's repository writes 0010's too).
        ids: list[int] = []
        for _ in range(30):
            d = random_draft(rng)
            rows = await conn.execute_fetchall(
                "INSERT INTO context_snapshots (project, layer, key, content, metadata,"
                " session_id, created_at, updated_at, last_accessed, access_count, memory_tier,"
                " content_hash, token_count) VALUES (?, ?, ?, ?, '{}', ?, ?, ?, NULL, 0,"
                " 'ACTIVE', ?, ?) ON CONFLICT DO NOTHING RETURNING id",
                (
                    d.project,
                    d.layer.value,
                    d.key,
                    d.content,
                    d.session_id,
                    encode_time(T0),
                    encode_time(T0),
                    d.content_hash,
                    d.token_count,
                ),
            )
            ids += [int(r[0]) for r in rows]
        await conn.commit()
        read = ids[:12]
        await conn.execute(
            "UPDATE context_snapshots SET last_accessed = ?, access_count = access_count + 1,"
            f" memory_tier = 'ACTIVE' WHERE id IN ({', '.join('?' * len(read))})",
            (encode_time(T0), *read),
        )
        await conn.commit()
        assert "0009_never_accessed_counts" in await apply_migrations(conn)
        await check(storage, repo, T0)
    finally:
        await conn.close()
