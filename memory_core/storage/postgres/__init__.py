"""PostgreSQL backend: asyncpg with a pool, tsvector + GIN for keywords, pgvector HNSW.

Every store of memstrata has a class here: memories and their vectors, conversations, the
scratchpad, preferences and playbooks, and business documents.
"""

from memory_core.storage.postgres.connection import PostgresStore, is_postgres_url, open_store
from memory_core.storage.postgres.conversations import PostgresConversationStore
from memory_core.storage.postgres.documents import PostgresDocumentStore
from memory_core.storage.postgres.hook_sessions import PostgresHookSessionStore
from memory_core.storage.postgres.leases import PostgresJobLeases
from memory_core.storage.postgres.migrate import apply_migrations, schema_version
from memory_core.storage.postgres.preferences import PostgresPlaybookStore, PostgresPreferenceStore
from memory_core.storage.postgres.repository import PostgresMemoryRepository
from memory_core.storage.postgres.scratchpad import PostgresScratchpadStore
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.postgres.vectors import PostgresVectorIndex

__all__ = [
    "PostgresConversationStore",
    "PostgresDocumentStore",
    "PostgresHookSessionStore",
    "PostgresJobLeases",
    "PostgresMemoryRepository",
    "PostgresPlaybookStore",
    "PostgresPreferenceStore",
    "PostgresScratchpadStore",
    "PostgresSession",
    "PostgresStore",
    "PostgresVectorIndex",
    "apply_migrations",
    "is_postgres_url",
    "open_store",
    "schema_version",
]
