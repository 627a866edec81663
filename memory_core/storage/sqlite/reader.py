"""SqliteKeywordReader: keyword search on a second connection to the same file.

One aiosqlite connection runs one statement at a time, so on it the two halves of a hybrid
search (FTS5 keywords, vector KNN) queue behind each other. In WAL mode a second connection
reads in parallel (its own driver thread; SQLite releases the GIL while a statement runs), so
the keyword half runs here while the vector half runs on the main connection. It sees every
committed write, which is every write a tool has returned from.

The connection opens at the first search (the hooks and most CLI commands never make a hybrid
search, and a cold process should not pay for it) and closes with the backend.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite

from memory_core.domain.models import TextMatch, TextQuery
from memory_core.storage.sqlite.connection import open_database
from memory_core.storage.sqlite.repository import SqliteMemoryRepository
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from memory_core.storage.sqlite.keyword_postings import KeywordPostings

__all__ = ["SqliteKeywordReader"]


class SqliteKeywordReader:
    """`search_text` of SqliteMemoryRepository, on its own connection (opened lazily)."""

    def __init__(self, path: Path, postings: KeywordPostings | None = None) -> None:
        self._path = path
        self._postings = postings  # shared with the main connection's repository
        self._db: aiosqlite.Connection | None = None
        self._repo: SqliteMemoryRepository | None = None
        self._opening = asyncio.Lock()

    async def _reader(self) -> SqliteMemoryRepository:
        async with self._opening:
            if self._repo is None:
                self._db = await open_database(self._path)
                self._repo = SqliteMemoryRepository(SqliteSession(self._db), self._postings)
            return self._repo

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        """Keyword candidates by BM25, best first (see SqliteMemoryRepository.search_text)."""
        return await (self._repo or await self._reader()).search_text(query)

    async def aclose(self) -> None:
        """Close the connection, if it was opened."""
        async with self._opening:
            if self._db is not None:
                await self._db.close()
                self._db = self._repo = None
