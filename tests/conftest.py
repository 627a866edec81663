"""The fixture chain mirrors the layers: settings -> db -> repo -> service -> server -> client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiosqlite
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from mcp import Client

from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
from memory_core.ports import MemoryRepository
from memory_core.services.memories import MemoryService
from memory_core.storage.postgres import PostgresStore, open_store
from memory_core.storage.sqlite import (
    apply_migrations,
    open_database,
)
from server.app import build_server
from server.settings import ScheduleSettings, Settings
from tests.backends import PostgresUnderTest, SqliteUnderTest, StorageUnderTest
from tests.fakes import FrozenClock
from tests.pg import PostgresServer, start_postgres

# A slow or shared machine must never fail the suite: Hypothesis's default 200 ms deadline per
# example is a wall-clock deadline, so every property test runs without one (and without the
# too_slow health check, which is the same deadline in another form).
hypothesis_settings.register_profile(
    "memstrata", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("memstrata")


def pytest_report_header() -> list[str]:
    import sqlean
    import sqlite_vec

    conn = sqlean.connect(":memory:")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    version, vec = conn.execute("select sqlite_version(), vec_version()").fetchone()
    options = [r[0] for r in conn.execute("pragma compile_options")]
    fts = [o for o in options if "FTS" in o]
    conn.close()
    return [f"sqlite {version} (sqlean), sqlite-vec {vec}, {' '.join(fts)}"]


@pytest.fixture(autouse=True)
def _every_toolset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tool is listed unless a test asks for the default surface (toolsets=...).

    Settings built in tests and CLI or server subprocesses that inherit the environment see
    MEMSTRATA_TOOLSETS=all, so the suites written for every tool keep reaching them.
    """
    monkeypatch.setenv("MEMSTRATA_TOOLSETS", "all")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        db=tmp_path / "memory.db",
        project="test",
        toolsets="all",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",  # keyword-only unless a test opts into an embedder
    )


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[aiosqlite.Connection]:
    conn = await open_database(settings.db)
    await apply_migrations(conn)
    yield conn
    await conn.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    # One server per test session; fails (never skips) the Postgres tests when it cannot start.
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture
async def pg_url(postgres_server: PostgresServer) -> AsyncIterator[str]:
    """A fresh, migrated PostgreSQL database for one test."""
    url = await postgres_server.create_database()
    yield url
    await postgres_server.drop_database(url)


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[PostgresStore]:
    store = await open_store(pg_url, pool_max=4)
    yield store
    await store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> StorageUnderTest:
    """The backend the contract tests run on: each test runs once per backend."""
    if request.param == "sqlite":
        return SqliteUnderTest(request.getfixturevalue("db"))
    return PostgresUnderTest(request.getfixturevalue("pg_store"))


@pytest.fixture
def repo(storage: StorageUnderTest) -> MemoryRepository:
    return storage.repo()


@pytest.fixture
def limits() -> Limits:
    return Limits(working_cap=5, max_content_chars=2_000)


@pytest.fixture
def service(repo: MemoryRepository, clock: FrozenClock, limits: Limits) -> MemoryService:
    return MemoryService(
        repo=repo, clock=clock, limits=limits, tiers=TierPolicy(), ranking=RankingPolicy()
    )


@pytest.fixture
async def client(settings: Settings, clock: FrozenClock) -> AsyncIterator[Client]:
    # pytest-asyncio runs a fixture's setup and teardown in different tasks, but the Client's
    # anyio cancel scopes must exit in the task that entered them: host it in one task.
    ready, done = asyncio.Event(), asyncio.Event()
    box: dict[str, Client] = {}

    async def host() -> None:
        async with Client(build_server(settings, clock=clock)) as c:
            box["client"] = c
            ready.set()
            await done.wait()

    task = asyncio.create_task(host())
    await asyncio.wait_for(ready.wait(), 10)
    yield box["client"]
    done.set()
    await task
