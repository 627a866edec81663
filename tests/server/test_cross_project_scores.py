"""No channel between projects through `search`: one project's answer, numbers included, is
the same whatever another project holds.

SQLite's FTS5 computes BM25 with the document counts and average length of the table it reads,
so each project has its own keyword table (migration 0011); `search` reports ranks and scores
built from ranks only. The test fills project B with hundreds of rows holding the query's
words and compares project A's answer before and after, field by field and in order, on both
backends; on SQLite also the raw BM25 of A's rows in A's table.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.storage.sqlite.connection import open_database
from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import FrozenClock
from tests.mcp_client import call, hosted

QUERY = "deploy billing service outage"
A_ROWS = [
    "Deploy the billing service on Fridays only after the freeze ends",
    "The billing outage on Monday came from an expired certificate",
    "Service owners must approve every deploy to production",
    "Deploy notes: billing service v2 rolled back after the outage",
    "Weekly sync moved to Thursday",
    "Outage review: the service mesh dropped billing requests during the deploy",
    "billing",
    "deploy deploy deploy the service",
]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


def _b_rows(n: int) -> list[dict[str, Any]]:
    filler = "lorem ipsum dolor sit amet consectetur " * 8
    out = []
    for i in range(n):
        words = ["deploy", "billing", "service", "outage"][: 1 + i % 4]
        out.append(
            {
                "layer": "episodic",
                "content": f"{' '.join(words * (1 + i % 3))} {filler[: i % 300]} {i}",
            }
        )
    return out


async def _raw_bm25(settings: Settings, project: str = "alpha") -> dict[int, float]:
    conn = await open_database(settings.db)
    try:
        found = await conn.execute_fetchall(
            "SELECT id FROM context_snapshots_fts_projects WHERE project = ?", (project,)
        )
        fts = f"context_snapshots_fts_{int(next(iter(found))[0])}"
        rows = await conn.execute_fetchall(
            f"SELECT rowid, bm25({fts}) FROM {fts}"
            f" WHERE {fts} MATCH 'deploy OR billing OR service OR outage'"
        )
    finally:
        await conn.close()
    return {int(r[0]): float(r[1]) for r in rows}


async def _before_and_after(settings: Settings) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """Project alpha's answer before and after project beta gains 600 rows of the query's words.

    Returns the two answers and whether the raw BM25 of alpha's rows moved (SQLite only).
    """
    async with hosted(settings, clock=FrozenClock()) as client:
        for content in A_ROWS:
            await call(client, "append", layer="episodic", content=content, project="alpha")
        # The first search marks its hits accessed (their tier and recency change once); the
        # second is the baseline: searching again changes nothing by itself.
        await call(client, "search", query=QUERY, project="alpha", limit=10, explain=True)
        before = await call(client, "search", query=QUERY, project="alpha", limit=10, explain=True)
        assert (
            await call(client, "search", query=QUERY, project="alpha", limit=10, explain=True)
            == before
        )
        raw_before = await _raw_bm25(settings) if settings.database_url is None else {}

        rows = _b_rows(600)
        for start in range(0, len(rows), 100):
            await call(client, "append_many", items=rows[start : start + 100], project="beta")

        after = await call(client, "search", query=QUERY, project="alpha", limit=10, explain=True)
    moved = False
    if raw_before:
        raw_after = await _raw_bm25(settings)
        moved = any(abs(raw_after[i] - v) > 1e-9 for i, v in raw_before.items())
    return before, after, moved


# A memory's own match with the query (its share of the query's words, its match band).
_OWN = ("word_share", "match")


def _numbers(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Every number reported per position (ranks, relevance, boosts, recency, score)."""
    return [
        {k: v for k, v in hit["signals"].items() if k not in ("tier", *_OWN)}
        | {"score": hit["score"]}
        for hit in answer["hits"]
    ]


def _own(answer: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """What each memory reports of its own match, by id."""
    return {h["id"]: {k: h["signals"].get(k) for k in _OWN} for h in answer["hits"]}


async def test_no_reported_number_depends_on_other_projects(settings: Settings):
    before, after, moved = await _before_and_after(settings)
    assert len(before["hits"]) >= 6
    if settings.database_url is None:
        assert not moved, "project alpha's keyword statistics moved with project beta's rows"
    # The same hits, and at each position the same numbers: no raw BM25, no BM25 ratio.
    assert sorted(h["id"] for h in after["hits"]) == sorted(h["id"] for h in before["hits"])
    assert _numbers(after) == _numbers(before)
    assert _own(after) == _own(before)
    assert {k: v for k, v in after.items() if k != "hits"} == {
        k: v for k, v in before.items() if k != "hits"
    }
    for hit in before["hits"]:
        assert "bm25" not in hit["signals"]


async def test_the_order_does_not_depend_on_other_projects(settings: Settings):
    before, after, _ = await _before_and_after(settings)
    assert after == before  # ids, order and every number
