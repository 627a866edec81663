"""On PostgreSQL, a search's access record that the database makes a deadlock's victim runs
again: the search neither fails nor counts a use twice."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from structlog.testing import capture_logs

from memory_core.storage.postgres import PostgresMemoryRepository, PostgresSession, PostgresStore
from tests.drafts import draft

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_an_access_record_chosen_as_a_deadlocks_victim_runs_again(
    pg_store: PostgresStore, pg_url: str
) -> None:
    repo = PostgresMemoryRepository(PostgresSession(pg_store.pool))
    first = (await repo.add(draft("the billing service moved"), T0)).memory
    second = (await repo.add(draft("staging listens on 8080"), T0)).memory
    at = T0 + timedelta(hours=2)
    other = await asyncpg.connect(pg_url)  # another writer, locking the rows the other way
    try:
        # So that the access record, not this writer, is the one to find the cycle, even on a
        # slow machine (a superuser's setting; the order of the waits decides it otherwise).
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await other.execute("SET deadlock_timeout = '60s'")
        writer = other.transaction()
        await writer.start()
        lock = "SELECT 1 FROM context_snapshots WHERE id = $1 FOR UPDATE"
        await other.execute(lock, second.id)
        access = asyncio.create_task(repo.record_access("p", [first.id, second.id], at))
        waiting = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        # Polled: the wait happens inside the database, with no event to await.
        while not await other.fetchval(waiting):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        # The access record holds the first row and waits for the second: a cycle once the
        # other writer waits for the first. The access record waited first, so its deadlock
        # check runs first and rolls it back.
        with pytest.raises(asyncpg.LockNotAvailableError):
            async with other.transaction():
                await other.execute(f"{lock} NOWAIT", first.id)
        with capture_logs() as logs:
            await other.execute(lock, first.id)
            await writer.commit()
            await access
    finally:
        await other.close()
    assert [e["event"] for e in logs] == ["storage.deadlock_retried"]
    for row in (first, second):
        seen = await repo.get("p", row.id)
        assert seen is not None and seen.access_count == 1 and seen.last_accessed == at
