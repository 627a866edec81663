"""SQLite backend: sqlean + sqlite-vec under aiosqlite, FTS5 for keywords.

The names below load their module at first use (PEP 562): importing one store of this package
(e.g. a hook's memories and hook sessions) does not import every other store with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "open_database": "connection",
    "sqlite_versions": "connection",
    "SqliteConversationStore": "conversations",
    "apply_migrations": "migrate",
    "schema_version": "migrate",
    "SqliteMemoryRepository": "repository",
    "SqliteSession": "session",
    "SqliteVectorIndex": "vectors",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
