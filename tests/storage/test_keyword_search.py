"""Keyword search on both backends: prefixes of query words, and metadata values."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import JsonValue

from memory_core.domain.fts_query import search_words
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery
from memory_core.ports import MemoryRepository
from memory_core.storage.migrations import load_migrations
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    apply_migrations,
    open_database,
)
from memory_core.storage.sqlite.migrate import default_migrations_dir

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def draft(
    content: str, *, key: str | None = None, metadata: dict[str, JsonValue] | None = None
) -> MemoryDraft:
    return MemoryDraft(
        project="p",
        layer=Layer.SEMANTIC if key else Layer.EPISODIC,
        key=key,
        content=content,
        metadata=metadata or {},
        content_hash=content_hash(content),
        token_count=1,
    )


async def found(repo: MemoryRepository, text: str, prefix_min_chars: int = 3) -> list[str]:
    query = TextQuery(
        project="p", words=search_words(text), prefix_min_chars=prefix_min_chars, limit=20
    )
    return [m.memory.content for m in await repo.search_text(query)]


async def test_a_word_finds_the_words_it_begins(repo: MemoryRepository) -> None:
    await repo.add(draft("Three vulnerabilities in the parser"), T0)
    await repo.add(draft("Parser rewrite planned"), T0)
    assert await found(repo, "vuln") == ["Three vulnerabilities in the parser"]
    assert await found(repo, "VULNER report") == ["Three vulnerabilities in the parser"]
    # Prefix matching off: only whole words match.
    assert await found(repo, "vuln", prefix_min_chars=0) == []


async def test_short_words_match_only_whole_words(repo: MemoryRepository) -> None:
    await repo.add(draft("abacus and abbey"), T0)
    await repo.add(draft("ab initio"), T0)
    # "ab" is under the 3-character minimum: it would match every word starting "ab".
    assert await found(repo, "ab") == ["ab initio"]
    assert await found(repo, "aba") == ["abacus and abbey"]


async def test_the_whole_word_ranks_above_words_it_only_begins(repo: MemoryRepository) -> None:
    # The exact match is the longer row: length alone would put it last.
    exact = "the vuln we found in the old build scripts of the parser last week"
    await repo.add(draft("vulnerable"), T0)
    await repo.add(draft(exact), T0)
    await repo.add(draft("vulnerability"), T0)
    hits = await found(repo, "vuln")
    assert hits[0] == exact and sorted(hits[1:]) == ["vulnerability", "vulnerable"]


async def test_a_memory_is_found_by_its_metadata_values(repo: MemoryRepository) -> None:
    tagged: dict[str, JsonValue] = {
        "ticket": {"system": "Jira", "labels": ["urgent", "billing"]},
        "count": 42,
    }
    await repo.add(draft("Fix the rounding bug", metadata=tagged), T0)
    await repo.add(draft("Unrelated note", metadata={"source": "email"}), T0)
    for text in ("jira", "urgent billing", "42", "JIR"):
        assert await found(repo, text) == ["Fix the rounding bug"], text
    # Keys are not indexed: every row of a kind shares them.
    assert await found(repo, "ticket labels") == []


async def test_a_content_match_ranks_above_a_metadata_only_match(repo: MemoryRepository) -> None:
    await repo.add(draft("Weekly sync notes", metadata={"topic": "billing"}), T0)
    await repo.add(draft("Billing export failed for the March invoices"), T0)
    assert await found(repo, "billing") == [
        "Billing export failed for the March invoices",
        "Weekly sync notes",
    ]


async def test_the_metadata_index_follows_updates_and_deletes(repo: MemoryRepository) -> None:
    first = await repo.add(draft("deploy notes", key="deploy", metadata={"env": "staging"}), T0)
    assert await found(repo, "staging") == ["deploy notes"]
    await repo.add(draft("deploy notes v2", key="deploy", metadata={"env": "production"}), T0)
    assert await found(repo, "staging") == []
    assert await found(repo, "production") == ["deploy notes v2"]
    assert await repo.delete("p", [first.memory.id]) == 1
    assert await found(repo, "production") == []


async def test_a_duplicate_append_indexes_its_merged_metadata(repo: MemoryRepository) -> None:
    await repo.add(draft("standup moved to 10am", metadata={"team": "payments"}), T0)
    await repo.add(draft("standup moved to 10am", metadata={"room": "Everest"}), T0)
    assert await found(repo, "everest") == ["standup moved to 10am"]
    assert await found(repo, "payments") == ["standup moved to 10am"]


@pytest.mark.parametrize(
    "text",
    [
        'a "quoted" NEAR(x y) -- drop table',
        "vuln* OR ^start AND -not +plus",
        "x² ünïcödé 東京 émoji🎉 col:umn {a b} [c] 'single' \\ back",
        "NOT NEAR AND OR",
        "\x00 nul & | ! <-> :* ''",
    ],
)
async def test_query_syntax_in_the_words_never_raises(repo: MemoryRepository, text: str) -> None:
    await repo.add(draft("x² ünïcödé col umn plus start", metadata={"s": "NEAR quoted"}), T0)
    assert await found(repo, text) is not None
    assert await found(repo, text, prefix_min_chars=1) is not None


async def test_upgrading_indexes_the_metadata_of_stored_rows(tmp_path: Path) -> None:
    """Rows written before migration 0007 are found by their metadata after it."""
    folder = tmp_path / "sql"
    folder.mkdir()
    earlier = [m for m in load_migrations(default_migrations_dir()) if m.number < 7]
    for migration in earlier:
        (folder / f"{migration.name}.sql").write_text(migration.sql, encoding="utf-8")
    db = await open_database(tmp_path / "old.db")
    try:
        await apply_migrations(db, folder)
        repo = SqliteMemoryRepository(SqliteSession(db))
        # Written with the columns schema 0006 has (today's repository also writes 0008's).
        await db.execute(
            "INSERT INTO context_snapshots (project, layer, content, metadata, created_at,"
            " updated_at, access_count, memory_tier, content_hash, token_count)"
            " VALUES ('p', 'episodic', 'Fix the rounding bug', '{\"system\": \"Jira\"}',"
            " '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 0, 'ACTIVE', 'h', 4)"
        )
        await db.commit()
        # Schema 0006's one shared index holds the content and the key, not the metadata.
        old = await db.execute_fetchall(
            "SELECT count(*) FROM context_snapshots_fts WHERE context_snapshots_fts MATCH 'jira'"
        )
        assert next(iter(old))[0] == 0
        assert "0007_search_prefix_metadata" in await apply_migrations(db)
        assert await found(repo, "jira") == ["Fix the rounding bug"]
        assert await found(repo, "roun") == ["Fix the rounding bug"]
    finally:
        await db.close()
