"""SqliteKeywordReader: hybrid search's keyword half on a second connection to the file."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession
from memory_core.storage.sqlite.reader import SqliteKeywordReader
from server.settings import Settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def draft(text: str, layer: Layer = Layer.EPISODIC) -> MemoryDraft:
    return MemoryDraft(
        project="p", layer=layer, content=text, content_hash=content_hash(text), token_count=1
    )


async def test_the_reader_answers_as_the_main_connection_and_sees_committed_writes(
    db: aiosqlite.Connection, settings: Settings
) -> None:
    repo = SqliteMemoryRepository(SqliteSession(db))
    reader = SqliteKeywordReader(settings.db)
    try:
        query = TextQuery(project="p", words=("tea", "green"), limit=20)
        assert await reader.search_text(query) == []  # opened lazily, on an empty store
        for i in range(30):
            await repo.add(draft(f"note {i} about {'green ' * (i % 3)}tea"), T0)
        await repo.add(draft("green tea rule", Layer.PROCEDURAL), T0)
        assert await reader.search_text(query) == await repo.search_text(query)
        only = TextQuery(project="p", words=("tea",), layer=Layer.PROCEDURAL, limit=5)
        assert [m.memory.content for m in await reader.search_text(only)] == ["green tea rule"]
        # Both connections at once (the hybrid search's overlap): still the same answers.
        a, b = await asyncio.gather(reader.search_text(query), repo.search_text(query))
        assert a == b
    finally:
        await reader.aclose()
        await reader.aclose()  # closing twice is harmless


async def test_a_reader_never_used_opens_no_connection(tmp_path: Path) -> None:
    reader = SqliteKeywordReader(tmp_path / "never.db")
    await reader.aclose()
    assert not (tmp_path / "never.db").exists()
