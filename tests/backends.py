"""The storage backends the contract tests run on, behind one small test-only interface."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Protocol

import aiosqlite
import pytest

from memory_core.ports import MemoryRepository, VectorIndex
from memory_core.ports.conversations import ConversationStore
from memory_core.ports.hooks import HookSessionStore
from memory_core.ports.knowledge import (
    DocumentStore,
    PlaybookStore,
    PreferenceStore,
    ScratchpadStore,
)
from memory_core.storage.postgres import (
    PostgresConversationStore,
    PostgresDocumentStore,
    PostgresHookSessionStore,
    PostgresMemoryRepository,
    PostgresPlaybookStore,
    PostgresPreferenceStore,
    PostgresScratchpadStore,
    PostgresSession,
    PostgresStore,
    PostgresVectorIndex,
)
from memory_core.storage.sqlite import (
    SqliteConversationStore,
    SqliteMemoryRepository,
    SqliteSession,
    SqliteVectorIndex,
)
from memory_core.storage.sqlite.documents import SqliteDocumentStore
from memory_core.storage.sqlite.hook_sessions import SqliteHookSessionStore
from memory_core.storage.sqlite.preferences import SqlitePlaybookStore, SqlitePreferenceStore
from memory_core.storage.sqlite.rows import encode_time
from memory_core.storage.sqlite.scratchpad import SqliteScratchpadStore
from server.settings import Settings

__all__ = ["PostgresUnderTest", "SqliteUnderTest", "StorageUnderTest", "settings_on"]


class StorageUnderTest(Protocol):
    name: str

    def repo(self) -> MemoryRepository: ...

    def vectors(self, *, exact_max: int = ...) -> VectorIndex: ...

    def conversations(self) -> ConversationStore: ...

    def hook_sessions(self) -> HookSessionStore: ...

    def preferences(self) -> PreferenceStore: ...

    def playbooks(self) -> PlaybookStore: ...

    def scratchpad(self) -> ScratchpadStore: ...

    def documents(self) -> DocumentStore: ...

    async def execute(self, sql: str, *args: Any) -> None:
        """Run raw SQL (`?` placeholders; datetimes are converted) behind the port's back."""
        ...

    async def fetchval(self, sql: str, *args: Any) -> Any: ...


def _sqlite_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(encode_time(a) if isinstance(a, datetime) else a for a in args)


class SqliteUnderTest:
    name = "sqlite"

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    def repo(self) -> MemoryRepository:
        return SqliteMemoryRepository(SqliteSession(self.db))

    def vectors(self, *, exact_max: int = 20_000) -> VectorIndex:
        return SqliteVectorIndex(SqliteSession(self.db), exact_max=exact_max)

    def conversations(self) -> ConversationStore:
        return SqliteConversationStore(SqliteSession(self.db))

    def hook_sessions(self) -> HookSessionStore:
        return SqliteHookSessionStore(SqliteSession(self.db))

    def preferences(self) -> PreferenceStore:
        return SqlitePreferenceStore(SqliteSession(self.db))

    def playbooks(self) -> PlaybookStore:
        return SqlitePlaybookStore(SqliteSession(self.db))

    def scratchpad(self) -> ScratchpadStore:
        return SqliteScratchpadStore(SqliteSession(self.db))

    def documents(self) -> DocumentStore:
        return SqliteDocumentStore(SqliteSession(self.db))

    async def execute(self, sql: str, *args: Any) -> None:
        await self.db.execute(sql, _sqlite_args(args))
        await self.db.commit()

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with self.db.execute(sql, _sqlite_args(args)) as cur:
            row = await cur.fetchone()
        return None if row is None else row[0]


def _numbered(sql: str) -> str:
    counter = iter(range(1, 1000))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


class PostgresUnderTest:
    name = "postgres"

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def repo(self) -> MemoryRepository:
        return PostgresMemoryRepository(PostgresSession(self.store.pool))

    def vectors(self, *, exact_max: int = 20_000) -> VectorIndex:
        return PostgresVectorIndex(PostgresSession(self.store.pool), exact_max=exact_max)

    def conversations(self) -> ConversationStore:
        return PostgresConversationStore(PostgresSession(self.store.pool))

    def hook_sessions(self) -> HookSessionStore:
        return PostgresHookSessionStore(PostgresSession(self.store.pool))

    def preferences(self) -> PreferenceStore:
        return PostgresPreferenceStore(PostgresSession(self.store.pool))

    def playbooks(self) -> PlaybookStore:
        return PostgresPlaybookStore(PostgresSession(self.store.pool))

    def scratchpad(self) -> ScratchpadStore:
        return PostgresScratchpadStore(PostgresSession(self.store.pool))

    def documents(self) -> DocumentStore:
        return PostgresDocumentStore(PostgresSession(self.store.pool))

    async def execute(self, sql: str, *args: Any) -> None:
        async with self.store.pool.acquire() as conn:
            await conn.execute(_numbered(sql), *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with self.store.pool.acquire() as conn:
            return await conn.fetchval(_numbered(sql), *args)


def settings_on(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """`settings` on the backend a parametrized fixture names (a fresh database for postgres).

    Used by the tool-level test modules as:
    `@pytest.fixture(params=["sqlite", "postgres"])` `def settings(request, settings)`.
    """
    if request.param == "sqlite":
        return settings
    return settings.model_copy(update={"database_url": request.getfixturevalue("pg_url")})
