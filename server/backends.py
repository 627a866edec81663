"""Which storage backend a process uses: the SQLite file (default) or PostgreSQL + pgvector.

`MEMSTRATA_DATABASE_URL=postgresql://...` puts every store in PostgreSQL: the memories
(context_snapshots, their vectors), the maintenance leases, conversations, the scratchpad,
preferences and playbooks, and business documents; the SQLite file MEMSTRATA_DB is then not
opened at all. Startup logs `store.backend` naming the backend and the stores it serves.
The PostgreSQL driver is an optional extra, imported only when a URL asks for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import structlog

from memory_core.errors import StorageError
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from server.settings import Settings, redacted_url

if TYPE_CHECKING:
    # Annotations only: the port modules load their domain models (the knowledge ones cost
    # a cold hook ~5 ms and session-start never uses them).
    from memory_core.ports import JobLeases, KeywordSearch, MemoryRepository, VectorIndex
    from memory_core.ports.conversations import ConversationStore
    from memory_core.ports.hooks import HookSessionStore
    from memory_core.ports.knowledge import (
        DocumentStore,
        PlaybookStore,
        PreferenceStore,
        ScratchpadStore,
    )
    from memory_core.ports.project_moves import ProjectMoves
    from memory_core.storage.postgres import PostgresSession
    from memory_core.storage.sqlite.checkpoints import WalCheckpoints
    from memory_core.storage.sqlite.keyword_postings import KeywordPostings
    from memory_core.storage.sqlite.reader import SqliteKeywordReader

__all__ = [
    "STORES",
    "Backend",
    "KnowledgeStores",
    "StoreFactories",
    "open_backend",
    "redacted_url",
]

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


async def _nothing_to_wait_for() -> None:
    return None


@dataclass(frozen=True)
class StoreFactories:
    """How a backend builds each of its stores (each called once, at the store's first use)."""

    repo: Callable[[], MemoryRepository]
    leases: Callable[[], JobLeases]
    vectors: Callable[[int], VectorIndex]
    conversations: Callable[[], ConversationStore]
    scratchpad: Callable[[], ScratchpadStore]
    preferences: Callable[[], PreferenceStore]
    playbooks: Callable[[], PlaybookStore]
    documents: Callable[[], DocumentStore]
    hook_sessions: Callable[[], HookSessionStore]
    project_moves: Callable[[], ProjectMoves]
    keyword_reader: Callable[[], KeywordSearch | None] = lambda: None
    # Waits for in-memory indexes being built in the background (benchmarks, tests).
    settled: Callable[[], Awaitable[None]] = _nothing_to_wait_for


@dataclass(frozen=True)
class Backend:
    """The opened storage: every store of memstrata, on one backend.

    Each store is built (and its module imported) at its first use, so a process that needs
    a few stores, like a hook, does not pay for the others: they answer the same either way.
    """

    name: Literal["sqlite", "postgres"]
    location: str  # the file, or the URL without its password (for logs and messages)
    migrations_applied: list[str]
    factories: StoreFactories

    @cached_property
    def repo(self) -> MemoryRepository:
        """The memories."""
        return self.factories.repo()

    @cached_property
    def leases(self) -> JobLeases:
        """The maintenance job leases."""
        return self.factories.leases()

    @cached_property
    def conversations(self) -> ConversationStore:
        """The conversation memory."""
        return self.factories.conversations()

    @cached_property
    def scratchpad(self) -> ScratchpadStore:
        """The session scratchpads."""
        return self.factories.scratchpad()

    @cached_property
    def preferences(self) -> PreferenceStore:
        """The user preferences."""
        return self.factories.preferences()

    @cached_property
    def knowledge(self) -> KnowledgeStores:
        """The scratchpad, preferences, playbooks and documents together."""
        return KnowledgeStores(
            scratchpad=self.scratchpad,
            preferences=self.preferences,
            playbooks=self.factories.playbooks(),
            documents=self.factories.documents(),
        )

    @cached_property
    def hook_sessions(self) -> HookSessionStore:
        """The Claude Code hook sessions."""
        return self.factories.hook_sessions()

    @cached_property
    def project_moves(self) -> ProjectMoves:
        """Moves of one project's rows to another name (server.project.adoption)."""
        return self.factories.project_moves()

    @cached_property
    def keyword_reader(self) -> KeywordSearch | None:
        """Hybrid search's keyword half on a connection of its own (SQLite); None: use `repo`."""
        return self.factories.keyword_reader()

    async def settled(self) -> None:
        """Wait for the in-memory indexes being built in the background, if any."""
        await self.factories.settled()

    def vectors(self, exact_max: int) -> VectorIndex:
        """The vector index of this backend (exact search up to `exact_max` rows a project)."""
        return self.factories.vectors(exact_max)

    def log_opened(self, embedding_model: str) -> None:
        """Log `store.opened`: the line every command that opened the store logs once."""
        log.info(
            "store.opened",
            db=self.location,
            backend=self.name,
            migrations_applied=self.migrations_applied,
            embedding_model=embedding_model,
        )


def _served(name: str, location: str) -> None:
    log.info("store.backend", backend=name, location=location, stores=list(STORES))


@asynccontextmanager
async def open_backend(settings: Settings, *, serving: bool = False) -> AsyncIterator[Backend]:
    """Open and migrate the configured backend: the SQLite file, else PostgreSQL.

    `serving`: a long-running server, which keeps the keyword postings of large SQLite
    projects in memory (settings.keyword_postings_min/max; memory_core.storage.sqlite.
    keyword_postings) and checkpoints the WAL beside its requests (sqlite.checkpoints). A hook
    or a one-shot command would pay to read the postings and not search again.

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
    readers: list[SqliteKeywordReader] = []
    postings: KeywordPostings | None = None
    if serving and settings.keyword_postings_max > 0:
        from memory_core.storage.sqlite.keyword_postings import KeywordPostings

        postings = KeywordPostings(
            min_rows=settings.keyword_postings_min, max_rows=settings.keyword_postings_max
        )

    def keyword_reader() -> KeywordSearch | None:
        if str(settings.db) == ":memory:":
            return None  # a second connection to an in-memory database would be another one
        from memory_core.storage.sqlite.reader import SqliteKeywordReader

        readers.append(SqliteKeywordReader(settings.db, postings))
        return readers[-1]

    checkpoints: WalCheckpoints | None = None
    session: SqliteSession | None = None
    try:
        applied = await apply_migrations(db)
        if serving and str(settings.db) != ":memory:":
            from memory_core.storage.sqlite.checkpoints import WalCheckpoints

            checkpoints = WalCheckpoints(settings.db)
            await checkpoints.start(db)
        # A server answers a search before recording its hits' use (SqliteSession.defer).
        session = SqliteSession(db, defers=serving)
        _served("sqlite", str(settings.db))
        yield Backend(
            name="sqlite",
            location=str(settings.db),
            migrations_applied=applied,
            factories=_sqlite_stores(session, keyword_reader, postings),
        )
    finally:
        if session is not None:
            await session.drain()
        if checkpoints is not None:
            await checkpoints.aclose()
        if postings is not None:
            await postings.aclose()  # its builds read on the connections closed below
        for reader in readers:
            await reader.aclose()
        await db.close()


def _sqlite_stores(
    session: SqliteSession,
    keyword_reader: Callable[[], KeywordSearch | None],
    postings: KeywordPostings | None,
) -> StoreFactories:
    """The SQLite stores, each module imported when its store is first used."""

    def repo() -> MemoryRepository:
        from memory_core.storage.sqlite.repository import SqliteMemoryRepository

        return SqliteMemoryRepository(session, postings)

    def leases() -> JobLeases:
        from memory_core.storage.sqlite.leases import LocalJobLeases

        return LocalJobLeases()

    def vectors(exact_max: int) -> VectorIndex:
        from memory_core.storage.sqlite.vectors import SqliteVectorIndex

        return SqliteVectorIndex(session, exact_max=exact_max)

    def conversations() -> ConversationStore:
        from memory_core.storage.sqlite.conversations import SqliteConversationStore

        return SqliteConversationStore(session)

    def scratchpad() -> ScratchpadStore:
        from memory_core.storage.sqlite.scratchpad import SqliteScratchpadStore

        return SqliteScratchpadStore(session)

    def preferences() -> PreferenceStore:
        from memory_core.storage.sqlite.preferences import SqlitePreferenceStore

        return SqlitePreferenceStore(session)

    def playbooks() -> PlaybookStore:
        from memory_core.storage.sqlite.preferences import SqlitePlaybookStore

        return SqlitePlaybookStore(session)

    def documents() -> DocumentStore:
        from memory_core.storage.sqlite.documents import SqliteDocumentStore

        return SqliteDocumentStore(session)

    def hook_sessions() -> HookSessionStore:
        from memory_core.storage.sqlite.hook_sessions import SqliteHookSessionStore

        return SqliteHookSessionStore(session)

    return StoreFactories(
        repo=repo,
        leases=leases,
        vectors=vectors,
        conversations=conversations,
        scratchpad=scratchpad,
        preferences=preferences,
        playbooks=playbooks,
        documents=documents,
        hook_sessions=hook_sessions,
        project_moves=lambda: _sqlite_moves(session),
        keyword_reader=keyword_reader,
        settled=postings.settled if postings is not None else _nothing_to_wait_for,
    )


def _sqlite_moves(session: SqliteSession) -> ProjectMoves:
    from memory_core.storage.sqlite.project_moves import SqliteProjectMoves

    return SqliteProjectMoves(session)


def _postgres_moves(pg: PostgresSession) -> ProjectMoves:
    from memory_core.storage.postgres.project_moves import PostgresProjectMoves

    return PostgresProjectMoves(pg)


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
            migrations_applied=store.migrations_applied,
            factories=StoreFactories(
                repo=lambda: postgres.PostgresMemoryRepository(pg),
                leases=lambda: postgres.PostgresJobLeases(pg),
                vectors=lambda exact_max: postgres.PostgresVectorIndex(pg, exact_max=exact_max),
                conversations=lambda: postgres.PostgresConversationStore(pg),
                scratchpad=lambda: postgres.PostgresScratchpadStore(pg),
                preferences=lambda: postgres.PostgresPreferenceStore(pg),
                playbooks=lambda: postgres.PostgresPlaybookStore(pg),
                documents=lambda: postgres.PostgresDocumentStore(pg),
                hook_sessions=lambda: postgres.PostgresHookSessionStore(pg),
                project_moves=lambda: _postgres_moves(pg),
            ),
        )
    finally:
        await store.close()
