"""Keyword search ranks a capped set of FTS5 matches, yet answers as if it ranked them all."""

from datetime import UTC, datetime

import aiosqlite
import pytest

from memory_core.domain.fts_query import search_words
from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, MemoryDraft, TextQuery
from memory_core.ports import MemoryRepository
from memory_core.storage.sqlite import SqliteMemoryRepository, SqliteSession, repository
from memory_core.storage.sqlite.fts_match import any_word, two_words
from memory_core.storage.sqlite.repository import _OVERFETCH

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [
    "tea",
    "coffee",
    "budget",
    "review",
    "deploy",
    "billing",
    "service",
    "morning",
    "quarterly",
    "notes",
]


def draft(text: str, project: str = "p", layer: Layer = Layer.EPISODIC) -> MemoryDraft:
    return MemoryDraft(
        project=project, layer=layer, content=text, content_hash=content_hash(text), token_count=1
    )


async def keyword_table(db: aiosqlite.Connection, project: str = "p") -> str:
    """The project's own FTS5 table (migration 0011)."""
    rows = await db.execute_fetchall(
        "SELECT id FROM context_snapshots_fts_projects WHERE project = ?", (project,)
    )
    return f"context_snapshots_fts_{int(next(iter(rows))[0])}"


async def uncapped(db: aiosqlite.Connection, query: TextQuery, fts: str | None = None) -> list[int]:
    """The former statement: join every match to its row, then sort (by `fts`: the OR query)."""
    fts_table = await keyword_table(db, query.project)
    sql = (
        f"SELECT s.id FROM {fts_table} JOIN context_snapshots AS s ON s.id = {fts_table}.rowid"
        f" WHERE {fts_table} MATCH ? AND s.project = ?"
        + (" AND s.layer = ?" if query.layer else "")
        + f" ORDER BY {fts_table}.rank, s.id DESC LIMIT ?"
    )
    fts = fts or any_word(query.words, query.prefix_min_chars)
    args = [fts, query.project, *([query.layer.value] if query.layer else []), query.limit]
    async with db.execute(sql, args) as cur:
        return [int(r[0]) for r in await cur.fetchall()]


@pytest.mark.parametrize(
    "text", ["tea", "tea coffee", "quarterly budget review", "deploy the billing service notes"]
)
async def test_capped_search_returns_the_same_top_hits(db: aiosqlite.Connection, text: str) -> None:
    repo = SqliteMemoryRepository(SqliteSession(db))
    for i in range(300):
        words = [WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7)] + [f"filler{i % 13}"] * (i % 5)
        await repo.add(draft(" ".join(words) + f" number {i}"), T0)
    query_words = search_words(text)
    for limit, prefix in ((1, 0), (5, 0), (20, 0), (5, 3), (20, 3)):
        query = TextQuery(project="p", words=query_words, prefix_min_chars=prefix, limit=limit)
        got = [m.memory.id for m in await repo.search_text(query)]
        assert got == await uncapped(db, query)


async def test_filters_that_drop_the_best_matches_fall_back_to_all_matches(
    db: aiosqlite.Connection,
) -> None:
    """Another layer's rows outrank the wanted one's: the capped set holds none of them."""
    repo: MemoryRepository = SqliteMemoryRepository(SqliteSession(db))
    limit = 3
    for i in range(limit * _OVERFETCH * 3):
        await repo.add(draft(f"tea tea tea {i}", layer=Layer.SEMANTIC), T0)
    mine = [(await repo.add(draft(f"tea and a long note number {i}"), T0)).memory for i in range(4)]
    wanted = TextQuery(project="p", words=("tea",), layer=Layer.EPISODIC, limit=limit)
    hits = await repo.search_text(wanted)
    assert [h.memory.id for h in hits] == await uncapped(db, wanted)
    assert {h.memory.id for h in hits} <= {m.id for m in mine} and len(hits) == limit
    working = await repo.add(draft("tea in the working layer", layer=Layer.WORKING), T0)
    only = TextQuery(project="p", words=("tea",), layer=Layer.WORKING, limit=limit)
    assert [h.memory.id for h in await repo.search_text(only)] == [working.memory.id]


async def test_every_word_first_on_many_matches_keeps_the_top_hits(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the match threshold, rows holding every word are ranked first, or OR runs."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    for i in range(40):
        await repo.add(draft(f"tea note {i} " + "filler " * (i % 4)), T0)
        await repo.add(draft(f"coffee note {i} " + "filler " * (i % 3)), T0)
    for i in range(6):
        await repo.add(draft(f"tea with coffee {i}"), T0)
    both = TextQuery(project="p", words=("tea", "coffee"), limit=20)
    none = TextQuery(project="p", words=("tea", "budget"), limit=20)
    exact = {q: [m.memory.id for m in await repo.search_text(q)] for q in (both, none)}
    monkeypatch.setattr(repository, "_SCORE_ALL_MAX", 10)  # every query now counts as large
    capped = [m.memory.id for m in await repo.search_text(both)]
    assert len(capped) == 6 and capped == exact[both][:6]  # all-word rows rank first anyway
    # No row holds both "tea" and "budget": the OR query answers, as without the threshold.
    assert [m.memory.id for m in await repo.search_text(none)] == exact[none]


async def test_two_words_first_when_too_few_rows_hold_every_word(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold, rows holding two of the words come before any single-word row."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    for i in range(30):  # short rows repeating one word: the OR query ranks them first
        await repo.add(draft(f"tea tea tea {i}"), T0)
        await repo.add(draft(f"coffee coffee {i}"), T0)
    long = "and a much longer note about the afternoon with many other words"
    two = [
        (await repo.add(draft(f"{pair} {long} {i}"), T0)).memory.id
        for i in range(3)
        for pair in ("tea coffee", "coffee milk")
    ]
    three = [(await repo.add(draft(f"tea coffee milk {long} {i}"), T0)).memory.id for i in range(2)]
    query = TextQuery(project="p", words=("tea", "coffee", "milk"), limit=20)  # needs 5 rows
    below = [m.memory.id for m in await repo.search_text(query)]
    assert below == await uncapped(db, query)  # under the threshold: the OR query, unchanged
    assert set(below[:8]) - set(two + three)  # single-word rows among its best 8

    monkeypatch.setattr(repository, "_SCORE_ALL_MAX", 10)
    above = [m.memory.id for m in await repo.search_text(query)]
    # 2 rows hold every word (fewer than 5): the 8 holding two or more answer, by BM25 of the
    # pairs, which counts the three-word rows twice.
    assert above == await uncapped(db, query, two_words(query.words))
    assert set(above) == set(two + three) and set(above[:2]) == set(three)


async def tea_and_coffee(repo: SqliteMemoryRepository) -> list[int]:
    """30 rows of tea, 30 of coffee, then 4 holding both, milk and note (their ids)."""
    for i in range(30):
        await repo.add(draft(f"tea tea tea {i}"), T0)
        await repo.add(draft(f"coffee coffee {i}"), T0)
    return [(await repo.add(draft(f"tea coffee milk note {i}"), T0)).memory.id for i in range(4)]


async def test_the_or_query_answers_when_two_words_find_too_few_rows(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = SqliteMemoryRepository(SqliteSession(db))
    await tea_and_coffee(repo)
    few = TextQuery(project="p", words=("tea", "coffee", "milk"), limit=20)
    exact = [m.memory.id for m in await repo.search_text(few)]
    monkeypatch.setattr(repository, "_SCORE_ALL_MAX", 10)
    # 4 rows hold two words or more, fewer than the 5 that limit 20 asks for.
    assert [m.memory.id for m in await repo.search_text(few)] == exact


async def test_a_long_query_pairs_its_most_selective_words(
    db: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past _TWO_WORDS_MAX words, the pairs are those of the words matching fewest rows."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    four = await tea_and_coffee(repo)
    many = TextQuery(project="p", words=("tea", "coffee", "milk", "note", *"abcde"), limit=8)
    exact = [m.memory.id for m in await repo.search_text(many)]
    assert set(four) < set(exact)  # the OR query: single-word rows come after them
    monkeypatch.setattr(repository, "_SCORE_ALL_MAX", 10)
    # 9 words: the 8 matching fewest rows (a-e: none; milk, note: 4; tea before coffee on
    # the tie) are paired; the 4 rows holding two of them are enough for limit 8 (2 hits).
    paired = two_words(("tea", "milk", "note", *"abcde"))
    assert [m.memory.id for m in await repo.search_text(many)] == await uncapped(db, many, paired)
    assert {m.memory.id for m in await repo.search_text(many)} == set(four)


async def test_the_probe_counts_whole_word_matches(
    db: aiosqlite.Connection,
) -> None:
    """Prefixes cost a score per extra row; a word common enough whole does without one."""
    repo = SqliteMemoryRepository(SqliteSession(db))
    whole = [(await repo.add(draft(f"vuln report {i}"), T0)).memory.id for i in range(3)]
    longer = (await repo.add(draft("three vulnerabilities"), T0)).memory.id
    # FTS5 stems the probe as the index: "vulnerability" counts the rows of "vulnerabilities".
    probe = ["vuln", "vulnerability", "zzzz"]
    table = await keyword_table(db)
    assert await repo._word_counts(table, probe, 3) == {"vuln": 3, "vulnerability": 1, "zzzz": 0}
    assert await repo._word_counts(table, probe, 1) == {"vuln": 1, "vulnerability": 1, "zzzz": 0}
    assert await repo._word_counts(table, probe, 4) == {"vuln": 3, "vulnerability": 1, "zzzz": 0}
    # Under the bar (1,000 rows) a word keeps its prefix; whole matches still rank first.
    short = TextQuery(project="p", words=("vuln",), prefix_min_chars=3, limit=3)
    assert sorted(m.memory.id for m in await repo.search_text(short)) == whole
    wide = TextQuery(project="p", words=("vuln",), prefix_min_chars=3, limit=10)
    assert [m.memory.id for m in await repo.search_text(wide)][-1] == longer
