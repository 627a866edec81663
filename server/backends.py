"""Which storage backend a process uses: the SQLite file (default) or PostgreSQL + pgvector.

`MEMSTRATA_DATABASE_URL=postgresql://...` puts every store in PostgreSQL: the memories
(context_snapshots, their vectors), the maintenance leases, conversations, the scratchpad,
preferences and playbooks, and business documents; the SQLite file MEMSTRATA_DB is then not
opened at all. Startup logs `store.backend` naming the backend and the stores it serves.
The PostgreSQL driver is an optional extra, imported only when a URL asks for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

import structlog

from memory_core.errors import StorageError
from memory_core.ports import JobLeases, KeywordSearch, MemoryRepository, VectorIndex
from memory_core.ports.conversations import ConversationStore
from memory_core.ports.hooks import HookSessionStore
from memory_core.ports.knowledge import (
    DocumentStore,
    PlaybookStore,
    PreferenceStore,
    ScratchpadStore,
)
from memory_core.storage.sqlite import (
    SqliteConversationStore,
    SqliteMemoryRepository,
    SqliteSession,
    SqliteVectorIndex,
    apply_migrations,
    open_database,
)
from memory_core.storage.sqlite.documents import SqliteDocumentStore
from memory_core.storage.sqlite.hook_sessions import SqliteHookSessionStore
from memory_core.storage.sqlite.leases import LocalJobLeases
from memory_core.storage.sqlite.preferences import SqlitePlaybookStore, SqlitePreferenceStore
from memory_core.storage.sqlite.reader import SqliteKeywordReader
from memory_core.storage.sqlite.scratchpad import SqliteScratchpadStore
from server.settings import Settings, redacted_url

__all__ = ["STORES", "Backend", "KnowledgeStores", "open_backend", "redacted_url"]

log = structlog.get_logger(__name__)

# Every store a backend serves (all of them, on either backend), as logged at startup.
STORES = (
    "memories",
    "vectors",
    "leases",
    "conversations",
    "scratchpad",
    "preferences",
    "playbooks",
    "documents",
    "hook_sessions",
)


@dataclass(frozen=True)
class KnowledgeStores:
    """The stores of the scratchpad, preferences, playbooks and documents, on one backend."""

    scratchpad: ScratchpadStore
    preferences: PreferenceStore
    playbooks: PlaybookStore
    documents: DocumentStore


@dataclass(frozen=True)
class Backend:
    """The opened storage: every store of memstrata, on one backend."""

    name: Literal["sqlite", "postgres"]
    location: str  # the file, or the URL without its password (for logs and messages)
    repo: MemoryRepository
    leases: JobLeases
    migrations_applied: list[str]
    make_vectors: Callable[[int], VectorIndex]
    conversations: ConversationStore
    knowledge: KnowledgeStores
    hook_sessions: HookSessionStore
    # Hybrid search's keyword half on a connection of its own (SQLite); None: use `repo`.
    keyword_reader: KeywordSearch | None = None

    def vectors(self, exact_max: int) -> VectorIndex:
        """The vector index of this backend (exact search up to `exact_max` rows a project)."""
        return self.make_vectors(exact_max)


def _served(name: str, location: str) -> None:
    log.info("store.backend", backend=name, location=location, stores=list(STORES))


@asynccontextmanager
async def open_backend(settings: Settings) -> AsyncIterator[Backend]:
    """Open and migrate the configured backend: the SQLite file, else PostgreSQL.

    Raises:
        StorageError: The database cannot be opened or migrated, or the PostgreSQL extra is
            not installed.
        SchemaMismatchError: The database was upgraded by a newer memstrata.
    """
    if settings.database_url:
        async with _postgres(settings) as backend:
            yield backend
        return
    db = await open_database(settings.db)
    # A second connection to an in-memory database would be another, empty database.
    reader = None if str(settings.db) == ":memory:" else SqliteKeywordReader(settings.db)
    try:
        applied = await apply_migrations(db)
        session = SqliteSession(db)
        _served("sqlite", str(settings.db))
        yield Backend(
            name="sqlite",
            location=str(settings.db),
            repo=SqliteMemoryRepository(session),
            leases=LocalJobLeases(),
            migrations_applied=applied,
            make_vectors=lambda exact_max: SqliteVectorIndex(session, exact_max=exact_max),
            conversations=SqliteConversationStore(session),
            knowledge=KnowledgeStores(
                scratchpad=SqliteScratchpadStore(session),
                preferences=SqlitePreferenceStore(session),
                playbooks=SqlitePlaybookStore(session),
                documents=SqliteDocumentStore(session),
            ),
            hook_sessions=SqliteHookSessionStore(session),
            keyword_reader=reader,
        )
    finally:
        if reader is not None:
            await reader.aclose()
        await db.close()


@asynccontextmanager
async def _postgres(settings: Settings) -> AsyncIterator[Backend]:
    url = settings.database_url or ""
    try:
        from memory_core.storage import postgres
    except ImportError as exc:
        raise StorageError(
            "MEMSTRATA_DATABASE_URL needs the PostgreSQL driver: pip install 'memstrata[postgres]'"
        ) from exc
    store = await postgres.open_store(url, pool_max=settings.database_pool_max)
    try:
        pg = postgres.PostgresSession(store.pool)
        _served("postgres", redacted_url(url))
        if settings.db.exists():
            # Rows left in an old SQLite file are not read any more (an operator who switched
            # without copying would miss them), so say so where an operator looks.
            log.warning(
                "store.sqlite_file_unused",
                path=str(settings.db),
                reason="MEMSTRATA_DATABASE_URL is set; this file is not read (move its stores "
                "with `memstrata copy-store`)",
            )
        yield Backend(
            name="postgres",
            location=redacted_url(url),
            repo=postgres.PostgresMemoryRepository(pg),
            leases=postgres.PostgresJobLeases(pg),
            migrations_applied=store.migrations_applied,
            make_vectors=lambda exact_max: postgres.PostgresVectorIndex(pg, exact_max=exact_max),
            conversations=postgres.PostgresConversationStore(pg),
            knowledge=KnowledgeStores(
                scratchpad=postgres.PostgresScratchpadStore(pg),
                preferences=postgres.PostgresPreferenceStore(pg),
                playbooks=postgres.PostgresPlaybookStore(pg),
                documents=postgres.PostgresDocumentStore(pg),
            ),
            hook_sessions=postgres.PostgresHookSessionStore(pg),
        )
    finally:
        await store.close()
