"""Imports commit every `batch` rows: other writers get in between, and a failure keeps the
batches already committed (importing the file again completes it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest
import sqlean
from pydantic import JsonValue

from memory_core.domain.inputs import content_hash
from memory_core.domain.knowledge import playbook_hash
from memory_core.domain.similarity import normalised_hash
from memory_core.ports.transfer import MemoryTransfer
from memory_core.services import transfer
from memory_core.storage.postgres import PostgresSession, PostgresStore
from memory_core.storage.postgres.transfer import PostgresMemoryTransfer
from memory_core.storage.sqlite import SqliteSession
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer
from server.settings import Settings
from tests.services.test_transfer_records import HEADER, line

NOW = datetime(2026, 11, 23, tzinfo=UTC)
T = "2026-11-20T10:00:00Z"


def export(rows: int) -> transfer.ParsedExport:
    lines = [json.dumps(HEADER)]
    lines += [
        json.dumps(
            {
                "kind": "memory",
                "id": i,
                "project": "work",
                "layer": "episodic",
                "key": None,
                "content": f"imported note {i}",
                "metadata": {},
                "session_id": None,
                "created_at": T,
                "updated_at": T,
                "last_accessed": None,
                "access_count": 0,
                "memory_tier": "RECENT",
                "content_hash": "",
                "token_count": 3,
            }
        )
        for i in range(1, rows + 1)
    ]
    return transfer.parse_export(lines, schema_version=7, now=NOW)


async def test_another_connection_writes_between_batches_without_waiting(
    db: aiosqlite.Connection, settings: Settings, tmp_path: Path
) -> None:
    path = settings.db
    other = sqlean.connect(str(path), isolation_level=None)
    other.execute("PRAGMA busy_timeout = 0")  # "database is locked" at once if the lock is held
    writes: list[int] = []

    async def between(done: int, total: int) -> None:
        # Awaited after each batch: the importer's transaction must be committed by now.
        other.execute("BEGIN IMMEDIATE")
        other.execute(
            "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
            " updated_at, access_count, memory_tier, content_hash, token_count)"
            " VALUES ('live', 'episodic', ?, '{}', ?, ?, 0, 'RECENT', ?, 1)",
            (
                f"live {done}",
                "2026-11-22T00:00:00.000000Z",
                "2026-11-22T00:00:00.000000Z",
                f"h{done}",
            ),
        )
        other.execute("COMMIT")
        writes.append(done)

    store = SqliteMemoryTransfer(SqliteSession(db), path, gap_s=0)
    try:
        counts = await transfer.import_records(store, export(2_000), batch=300, progress=between)
    finally:
        other.close()
    # One live write after each of the 7 batches, and after the batch of renumbered rows: the
    # first 6 live writes took ids the file's next batch held (301, 601, ...), so those 6
    # rows were imported under new ids at the end.
    assert len(writes) == 8 and writes == sorted(writes) and writes[-1] == 2_000
    assert (counts.imported, counts.renumbered, counts.skipped) == (2_000, 6, 0)
    assert await store.count_rows("memory", "live") == 8


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_failed_import_keeps_its_committed_batches_and_a_rerun_completes_it(
    db: aiosqlite.Connection, pg_store: PostgresStore, settings: Settings, backend: str
) -> None:
    store: MemoryTransfer = (
        SqliteMemoryTransfer(SqliteSession(db), settings.db, gap_s=0)
        if backend == "sqlite"
        else PostgresMemoryTransfer(PostgresSession(pg_store.pool))
    )
    parsed = export(1_000)

    async def killed(done: int, total: int) -> None:
        if done >= 400:
            raise RuntimeError("the process died")

    with pytest.raises(RuntimeError):
        await transfer.import_records(store, parsed, batch=200, progress=killed)
    assert await store.count_rows("memory", None) == 400  # two whole batches, nothing else
    counts = await transfer.import_records(store, parsed, batch=200)
    assert (counts.imported, counts.skipped, counts.renumbered) == (600, 400, 0)
    assert await store.count_rows("memory", None) == 1_000


async def test_an_import_redacts_every_kind_of_record_as_the_tools_do(
    db: aiosqlite.Connection, settings: Settings
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    session = line("conversation_session", qa_summary=f"Q: which token? A: {token}")
    entry = line(
        "conversation_entry",
        type="tool_call",
        role="assistant",
        content=f"calling with {token}",
        tool_name="github",
        arguments=json.dumps({"auth": token}),
        token_count=5,
    )
    preference = line("preference", key=f"token {token}", value=f"use {token}")
    lines = [json.dumps(HEADER), session, entry, preference]
    parsed = transfer.parse_export(lines, schema_version=7, now=NOW)
    store = SqliteMemoryTransfer(SqliteSession(db), settings.db, gap_s=0)
    counts = await transfer.import_records(store, parsed)
    assert counts.redacted == {"github_token": 5}
    written = [
        json.dumps(row, default=str)
        for kind in ("conversation_session", "conversation_entry", "preference")
        for row in await store.export_rows(kind, None, after=None, limit=10)
    ]
    assert len(written) == 3
    assert not [w for w in written if "A1b2C3d4" in w]
    assert all("[REDACTED:github_token" in w for w in written)


async def test_an_import_that_redacts_a_row_recomputes_its_identity_hash(
    db: aiosqlite.Connection, settings: Settings
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    secret_text = f"deploy with {token}"
    snippet = line(
        "scratchpad_snippet",
        snippet=secret_text,
        norm_hash=normalised_hash(secret_text),
        embedding=None,
        embed_model=None,
    )
    clean = line("scratchpad_snippet", id=2, norm_hash="ab" * 32, embedding=None, embed_model=None)
    slots: dict[str, JsonValue] = {"repo": "shop"}
    calls: list[JsonValue] = [{"tool": "gh", "auth": token}]
    playbook = line(
        "playbook",
        flow="release",
        user_query="cut a release",
        slots=json.dumps(slots, sort_keys=True),
        tool_calls=json.dumps(calls),
        outcome="released",
        record_hash=playbook_hash("release", "cut a release", slots, calls, "released"),
    )
    document = line(
        "document", body=f"token: {token}", content_hash=content_hash(f"token: {token}")
    )
    rows = (json.dumps(HEADER), snippet, clean, playbook, document)
    parsed = transfer.parse_export(rows, schema_version=7, now=NOW)
    store = SqliteMemoryTransfer(SqliteSession(db), settings.db, gap_s=0)
    counts = await transfer.import_records(store, parsed)
    assert counts.redacted == {"github_token": 3}

    snippets = await store.export_rows("scratchpad_snippet", None, after=None, limit=10)
    by_id = {r["id"]: r for r in snippets}
    assert by_id[1]["norm_hash"] == normalised_hash(by_id[1]["snippet"])
    assert "A1b2C3d4" not in by_id[1]["snippet"]
    assert by_id[2]["norm_hash"] == "ab" * 32  # untouched rows round-trip as written
    (book,) = await store.export_rows("playbook", None, after=None, limit=10)
    assert "A1b2C3d4" not in book["tool_calls"]
    stored_calls = json.loads(book["tool_calls"])
    assert book["record_hash"] == playbook_hash(
        "release", "cut a release", slots, stored_calls, "released"
    )
    (doc,) = await store.export_rows("document", None, after=None, limit=10)
    assert doc["content_hash"] == content_hash(doc["body"])
    assert "A1b2C3d4" not in doc["body"]
