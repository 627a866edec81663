"""A serving SQLite process records a search's hits' use after answering (SqliteSession.defer):
never lost, always before its own next statement, and never holding the answer up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import SearchRequest
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    apply_migrations,
    open_database,
)
from server.container import open_container
from server.settings import Settings
from tests.drafts import draft

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_a_deferred_write_runs_before_the_sessions_next_statement(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "m.db")
    other = await open_database(tmp_path / "m.db")
    try:
        await apply_migrations(db)
        session = SqliteSession(db, defers=True)
        repo = SqliteMemoryRepository(session)
        row = (await repo.add(draft("the billing service moved"), T0)).memory
        at = T0 + timedelta(hours=1)

        await repo.record_access("p", [row.id], at)
        read = await repo.get("p", row.id)  # no yield in between: the read runs it first
        assert read is not None and read.access_count == 1 and read.last_accessed == at

        await repo.record_access("p", [row.id], at)
        await session.drain()
        seen = await SqliteMemoryRepository(SqliteSession(other)).get("p", row.id)
        assert seen is not None and seen.access_count == 2

        # A write that fails is logged, and the connection goes on.
        with capture_logs() as logs:
            session.defer("recording access", "UPDATE no_such_table SET a = 1", ())
            assert await repo.get("p", row.id) is not None
        assert [e["event"] for e in logs] == ["storage.deferred_write_failed"]
    finally:
        await other.close()
        await db.close()


async def test_a_server_answers_a_search_while_another_process_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    settings = Settings(db=tmp_path / "m.db", embedding_model="none")
    async with open_container(settings) as store:
        added = await store.memories.append("p", Layer.EPISODIC, "the billing service moved")
    other = await open_database(settings.db)
    try:
        async with open_container(settings, serving=True) as store:
            await other.execute("BEGIN IMMEDIATE")  # another process writing: a long import
            request = SearchRequest(project="p", query="billing", mode=SearchMode.KEYWORD)
            # Recording the hit's use waits for the lock; the answer does not.
            (hit,) = (await store.memories.search(request)).hits
            assert hit.memory.id == added.memory.id and hit.memory.access_count == 1
            await other.execute("COMMIT")
        # Closing the server ran the write it still held.
        async with open_container(settings) as store:
            stored = await store.memories.read("p", added.memory.id)
        assert stored.access_count == 2  # the search's use, then this read's
    finally:
        await other.close()
