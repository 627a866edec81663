"""SQLite backend: sqlean + sqlite-vec under aiosqlite, FTS5 for keywords."""

from memory_core.storage.sqlite.connection import open_database, sqlite_versions
from memory_core.storage.sqlite.conversations import SqliteConversationStore
from memory_core.storage.sqlite.migrate import apply_migrations, schema_version
from memory_core.storage.sqlite.repository import SqliteMemoryRepository
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.vectors import SqliteVectorIndex

__all__ = [
    "SqliteConversationStore",
    "SqliteMemoryRepository",
    "SqliteSession",
    "SqliteVectorIndex",
    "apply_migrations",
    "open_database",
    "schema_version",
    "sqlite_versions",
]
