"""Writes across connections to one file: BEGIN IMMEDIATE retried with jitter, then given up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlean

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft
from memory_core.errors import StorageError
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite import session as session_module
from memory_core.storage.sqlite.connection import is_busy
from memory_core.storage.sqlite.repository import SqliteMemoryRepository

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _no_wait(db) -> None:
    # Without the busy timeout, a locked database fails at once: only our retries can help.
    await db.execute("PRAGMA busy_timeout = 0")


@asynccontextmanager
async def _holder_and_writer(path: Path) -> AsyncIterator[tuple[Any, Any]]:
    """Two connections to one file: `holder` takes the lock, `writer` (no busy wait) retries."""
    holder, writer = await open_database(path), await open_database(path)
    try:
        await _no_wait(writer)
        yield holder, writer
    finally:
        await holder.close()
        await writer.close()


def _commit_soon(holder) -> asyncio.Task[None]:
    """Commit `holder`'s open transaction 0.3 s from now, while the caller's write retries."""

    async def release() -> None:
        await asyncio.sleep(0.3)
        await holder.execute("COMMIT")

    return asyncio.create_task(release())


async def test_a_write_waits_out_another_connections_lock(tmp_path: Path):
    async with _holder_and_writer(tmp_path / "m.db") as (holder, writer):
        await apply_migrations(holder)
        await holder.execute("BEGIN IMMEDIATE")
        releaser = _commit_soon(holder)
        async with SqliteSession(writer).write("test") as db:
            await db.execute("CREATE TABLE t (x)")
        await releaser
        assert not writer.in_transaction


async def test_retries_are_bounded_and_leave_no_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(session_module, "BACKOFF_CAP_S", 0.01)
    async with _holder_and_writer(tmp_path / "m.db") as (holder, writer):
        await holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StorageError, match="test") as caught:
            async with SqliteSession(writer).write("test"):
                pytest.fail("the body must not run without the lock")
        assert is_busy(caught.value.__cause__)  # type: ignore[arg-type]
        assert not writer.in_transaction
        await holder.execute("ROLLBACK")


async def test_other_errors_are_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    attempts = 0
    db = await open_database(tmp_path / "m.db")
    session = SqliteSession(db)
    original = session._begin

    async def counting(begin: str, operation: str) -> None:
        nonlocal attempts
        attempts += 1
        await original(begin, operation)

    monkeypatch.setattr(session, "_begin", counting)
    try:
        with pytest.raises(StorageError):
            async with session.write("bad sql") as conn:
                await conn.execute("INSERT INTO no_such_table VALUES (1)")
        assert attempts == 1
        assert not db.in_transaction
    finally:
        await db.close()


def test_is_busy_recognises_locked_and_busy_only():
    conn = sqlean.connect(":memory:")
    with pytest.raises(sqlean.Error) as caught:
        conn.execute("select * from nope")
    conn.close()
    assert not is_busy(caught.value)
    assert not is_busy(ValueError("database is locked"))


async def test_recording_access_waits_out_another_connections_lock(tmp_path: Path):
    # hand_out's UPDATE is its own transaction (no BEGIN): a busy database is retried the
    # same way, and the updated rows come back once it has run.
    async with _holder_and_writer(tmp_path / "m.db") as (holder, writer):
        await apply_migrations(holder)
        text = "the access is recorded"
        draft = MemoryDraft(
            project="p",
            layer=Layer.EPISODIC,
            content=text,
            content_hash=content_hash(text),
            token_count=4,
        )
        added = (await SqliteMemoryRepository(SqliteSession(holder)).add(draft, T0)).memory
        await holder.execute("BEGIN IMMEDIATE")
        releaser = _commit_soon(holder)
        handed = await SqliteMemoryRepository(SqliteSession(writer)).hand_out(
            "p", [added.id], T0 + timedelta(hours=1)
        )
        await releaser
        assert [(m.id, m.access_count) for m in handed] == [(added.id, 1)]
        assert not writer.in_transaction
        count = await holder.execute_fetchall("SELECT access_count FROM context_snapshots")
        assert [r[0] for r in count] == [1]


async def test_a_single_statement_write_gives_up_with_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(session_module, "BACKOFF_CAP_S", 0.01)
    async with _holder_and_writer(tmp_path / "m.db") as (holder, writer):
        await apply_migrations(holder)
        await holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StorageError, match="recording access") as caught:
            await SqliteSession(writer).write_memories(
                "recording access",
                "UPDATE context_snapshots SET access_count = access_count + 1 RETURNING *",
                (),
            )
        assert is_busy(caught.value.__cause__)  # type: ignore[arg-type]
        assert not writer.in_transaction
        await holder.execute("ROLLBACK")
