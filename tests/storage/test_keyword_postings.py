"""A server's in-memory keyword postings (storage.sqlite.keyword_postings) answer exactly as
FTS5 does: the same rows, in the same order, with the same BM25 values, whatever was written
since they were read, by this connection or another."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery
from memory_core.domain.versions import MemoryChange
from memory_core.storage.sqlite import (
    SqliteMemoryRepository,
    SqliteSession,
    apply_migrations,
    open_database,
)
from memory_core.storage.sqlite.keyword_postings import KeywordPostings
from memory_core.storage.sqlite.keyword_tables import keyword_table
from server.backends import open_backend
from server.settings import Settings
from tests.drafts import draft as draft_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)
VOCABULARY = [
    "deploy",
    "deploys",
    "deployed",
    "deployment",
    "billing",
    "bill",
    "service",
    "services",
    "outage",
    "outages",
    "certificate",
    "certificates",
    "expired",
    "rotation",
    "rotate",
    "database",
    "databases",
    "migration",
    "migrations",
    "index",
    "indexes",
    "vulnerability",
    "vulnerabilities",
    "scanner",
    "scanning",
    "café",
    "naïve",
    "release",
    "released",
    "releases",
    "staging",
    "production",
    "the",
    "a",
    "of",
    "to",
    "and",
    "on",
    "with",
    "2024",
    "v2",
]
QUERIES = [
    ("deploy",),
    ("billing", "outage"),
    ("deployments", "certificates", "rotation"),
    ("vulner",),
    ("vulnerabilities", "scanner"),
    ("cafe", "naive"),
    ("release", "release", "staging"),
    ("migrat", "databases", "index", "2024"),
    ("unknownword",),
    ("the", "of", "and"),
    ("v2", "production", "expired", "certificate", "service", "outage", "billing"),
]


def draft(rng: random.Random, n: int, project: str) -> MemoryDraft:
    words = rng.choices(VOCABULARY, k=rng.randint(3, 18))
    layer = rng.choice([Layer.EPISODIC, Layer.EPISODIC, Layer.SEMANTIC])
    text = f"{' '.join(words)} note {n}"
    return MemoryDraft(
        project=project,
        layer=layer,
        content=text,
        key=f"{rng.choice(VOCABULARY)} key {n}" if layer is Layer.SEMANTIC else None,
        metadata={"source": rng.choice(["deploy bot", "scanner", "billing"]), "n": n},
        tags=tuple(rng.sample(["ops", "infra", "money"], rng.randint(0, 2))),
        dates="2024-03-01" if n % 5 == 0 else None,
        content_hash=content_hash(text),
        token_count=len(words) + 2,
        created_at=T0 + timedelta(minutes=n),
    )


def queries(project: str) -> list[TextQuery]:
    out = []
    for words in QUERIES:
        out.append(TextQuery(project=project, words=words, prefix_min_chars=4, limit=10))
        out.append(TextQuery(project=project, words=words, prefix_min_chars=0, limit=40))
        out.append(
            TextQuery(project=project, words=words, prefix_min_chars=4, limit=5, tags=("ops",))
        )
        out.append(
            TextQuery(
                project=project,
                words=words,
                prefix_min_chars=4,
                limit=8,
                layer=Layer.SEMANTIC,
                since=T0 + timedelta(minutes=100),
            )
        )
    return out


async def same_answers(plain: SqliteMemoryRepository, held: SqliteMemoryRepository) -> None:
    for query in queries("alpha"):
        want = [(m.memory.id, m.bm25) for m in await plain.search_text(query)]
        got = [(m.memory.id, m.bm25) for m in await held.search_text(query)]
        assert got == want, query


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    path = tmp_path / "m.db"
    db = await open_database(path)
    other = await open_database(path)  # another process's connection to the same file
    await apply_migrations(db)
    session = SqliteSession(db)
    postings = KeywordPostings(
        min_rows=100, max_rows=10_000, rebuild_every_s=0.0, rebuild_spacing=0.0
    )
    rng = random.Random(7)
    plain = SqliteMemoryRepository(session)
    await plain.add_many([draft(rng, n, "alpha") for n in range(600)], T0)
    await plain.add_many([draft(rng, n, "small") for n in range(50)], T0)
    try:
        yield {
            "plain": plain,
            "held": SqliteMemoryRepository(session, postings),
            "other": SqliteMemoryRepository(SqliteSession(other)),
            "postings": postings,
            "session": session,
            "rng": rng,
        }
    finally:
        await postings.aclose()
        await other.close()
        await db.close()


async def held_rows(s: dict[str, Any], project: str) -> int | None:
    table = await keyword_table(s["session"], project)
    assert table is not None
    held: dict[str, int] = s["postings"].held()
    return held.get(table)


async def test_the_postings_rank_as_fts5_does_to_the_last_bit(stores: dict[str, Any]) -> None:
    plain, held = stores["plain"], stores["held"]
    # The first search starts reading the postings (FTS5 answers it); then they answer.
    await same_answers(plain, held)
    await stores["postings"].settled()
    assert await held_rows(stores, "alpha") == 600
    await same_answers(plain, held)
    # A project smaller than min_rows is searched by FTS5 only.
    small = TextQuery(project="small", words=("deploy", "billing"), limit=10)
    assert [m.memory.id for m in await held.search_text(small)] == [
        m.memory.id for m in await plain.search_text(small)
    ]
    await stores["postings"].settled()
    assert await held_rows(stores, "small") is None


async def test_new_rows_are_read_by_id_and_edits_send_searches_back_to_fts5(
    stores: dict[str, Any],
) -> None:
    plain, held, other, rng = stores["plain"], stores["held"], stores["other"], stores["rng"]
    await held.search_text(queries("alpha")[0])
    await stores["postings"].settled()

    # Rows another connection added: read by id at the next search, nothing rebuilt.
    await other.add_many([draft(rng, n, "alpha") for n in range(600, 640)], T0)
    await same_answers(plain, held)
    assert await held_rows(stores, "alpha") == 640
    # One row at a time, a search after each: more pieces than are kept apart.
    for n in range(640, 660):
        await other.add(draft(rng, n, "alpha"), T0)
        await held.search_text(queries("alpha")[0])
    await same_answers(plain, held)
    assert await held_rows(stores, "alpha") == 660

    # A rewritten row: the next searches are FTS5's until the postings are read again. Its
    # new text has as many tokens as the old, so only the table's `edits` count reveals it.
    target = (await plain.search_text(queries("alpha")[0]))[0].memory
    text = " ".join(["rotation"] * len(target.content.split()))
    await other.update(
        "alpha",
        target.id,
        MemoryChange(content=text, content_hash=content_hash(text), token_count=len(text.split())),
        T0 + timedelta(days=1),
    )
    await same_answers(plain, held)
    await stores["postings"].settled()
    assert await held_rows(stores, "alpha") == 660
    await same_answers(plain, held)

    # A removed row, likewise; and a row holding a word 150 times (a weight past one byte).
    many = " ".join(["deploy"] * 150)
    await other.add(draft_of(many, project="alpha"), T0)
    await other.delete("alpha", [target.id])
    await same_answers(plain, held)
    await stores["postings"].settled()
    assert await held_rows(stores, "alpha") == 660
    await same_answers(plain, held)


async def test_only_a_server_keeps_postings(tmp_path: Path) -> None:
    async def postings(settings: Settings, serving: bool) -> KeywordPostings | None:
        async with open_backend(settings, serving=serving) as backend:
            repo = backend.repo
            assert isinstance(repo, SqliteMemoryRepository)
            return repo.keyword_postings

    settings = Settings(db=tmp_path / "m.db")
    assert await postings(settings, serving=False) is None  # hooks, one-shot commands
    assert isinstance(await postings(settings, serving=True), KeywordPostings)
    off = Settings(db=tmp_path / "m.db", keyword_postings_max=0)
    assert await postings(off, serving=True) is None


async def test_superseded_rows_among_the_best_are_passed_over(stores: dict[str, Any]) -> None:
    # Without another filter, the postings read only the best `limit` rows; superseded ones
    # among them are made up for from the rows ranked next, as FTS5's own search does.
    plain, held = stores["plain"], stores["held"]
    await held.search_text(queries("alpha")[0])
    await stores["postings"].settled()
    query = queries("alpha")[0]
    best = [m.memory.id for m in await plain.search_text(query)]
    text = "deploy rotation note superseding"
    await plain.add(draft_of(text, project="alpha", supersedes=tuple(best[:6])), T0)
    await same_answers(plain, held)
    assert await held_rows(stores, "alpha") == 601  # the postings answered, not FTS5
    got = [m.memory.id for m in await held.search_text(query)]
    assert len(got) == query.limit and not set(got) & set(best[:6])


async def test_a_rebuild_waits_in_proportion_to_the_last_build(stores: dict[str, Any]) -> None:
    # A large project's build takes a minute: after an edit, FTS5 answers until as many
    # times that has passed (`rebuild_spacing`), rather than rebuilding after every edit.
    plain, held, other, postings = (
        stores["plain"],
        stores["held"],
        stores["other"],
        stores["postings"],
    )
    postings.rebuild_spacing = 1e9
    await held.search_text(queries("alpha")[0])
    await postings.settled()
    assert await held_rows(stores, "alpha") == 600
    target = (await plain.search_text(queries("alpha")[0]))[0].memory
    await other.delete("alpha", [target.id])
    await same_answers(plain, held)
    await postings.settled()
    assert await held_rows(stores, "alpha") is None  # not read again: FTS5 still answers
    await same_answers(plain, held)
    postings.rebuild_spacing = 0.0
    await held.search_text(queries("alpha")[0])
    await postings.settled()
    assert await held_rows(stores, "alpha") == 599
    await same_answers(plain, held)
