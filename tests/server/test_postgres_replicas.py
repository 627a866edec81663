"""Two memstrata replicas on one PostgreSQL, and copying stores between the backends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_core.domain.models import Layer
from server.app import build_server
from server.cli.copy import copy_between
from server.container import Container, open_container
from server.cron import parse_cron
from server.scheduler import once_per_schedule, prune_job, recalculate_job
from server.settings import Settings
from tests.fakes import FrozenClock, ready_fake


def replica(settings: Settings, pg_url: str, folder: Path, name: str) -> Settings:
    # One shared PostgreSQL holds every store; the (unused) SQLite paths differ per replica.
    # PostgreSQL for the memories.
    (folder / name).mkdir()
    return settings.model_copy(update={"database_url": pg_url, "db": folder / name / "m.db"})


@asynccontextmanager
async def clients(*all_settings: Settings, clock: FrozenClock) -> AsyncIterator[list[Client]]:
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(Client(build_server(s, clock=clock)))
            for s in all_settings
        ]


async def structured(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


async def test_two_replicas_append_and_search_concurrently_without_loss_or_duplicates(
    settings: Settings, pg_url: str, tmp_path: Path, clock: FrozenClock
) -> None:
    a = replica(settings, pg_url, tmp_path, "a")
    b = replica(settings, pg_url, tmp_path, "b")

    async def host() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with clients(a, b, clock=clock) as (one, two):
            appends = [
                structured(c, "append", content=f"deploy note {i} from {who}", layer="episodic")
                for i in range(25)
                for who, c in (("a", one), ("b", two))
            ]
            # The same fact from both replicas at once must land once.
            appends += [
                structured(c, "append", content="shared fact: staging is on 8080", layer="episodic")
                for c in (one, two)
                for _ in range(3)
            ]
            searches = [structured(c, "search", query="deploy note") for c in (one, two) * 5]
            results = await asyncio.gather(*appends, *searches)
            return results[: len(appends)], results[len(appends) :]

    # Hosted in one task: the clients' cancel scopes must exit where they were entered.
    stored, found = await asyncio.create_task(host())
    ids = [r["id"] for r in stored]
    assert len(set(ids)) == 50 + 1  # every note kept, the shared fact stored once
    assert all(s["hits"] is not None for s in found)
    async with open_container(a, clock) as container:
        rows = await container.repo.list_layer("test", Layer.EPISODIC, None, newest_first=False)
    contents = [m.content for m in rows]
    assert len(contents) == len(set(contents)) == 51


async def test_a_scheduled_job_runs_once_per_fire_across_replicas(
    settings: Settings, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a = replica(settings, pg_url, tmp_path, "a")
    b = replica(settings, pg_url, tmp_path, "b")
    calls: list[str] = []

    async def job(container: Container) -> int:
        calls.append(str(container.settings.db))
        await asyncio.sleep(0.2)  # long enough for the other replica to try meanwhile
        return await recalculate_job(container)

    wrapped = once_per_schedule("recalculate_tiers", parse_cron("* * * * *"), job)
    # The slot is the current minute: start well inside one, or a run that straddles the
    # boundary belongs to the next slot and rightly runs again.
    second = datetime.now(UTC).second + datetime.now(UTC).microsecond / 1e6
    if second > 50:
        await asyncio.sleep(60.5 - second)
    async with open_container(a) as one, open_container(b) as two:
        assert one.leases is not None and type(one.leases).__name__ == "PostgresJobLeases"
        together = await asyncio.gather(wrapped(one), wrapped(two))
        later = await wrapped(two)  # same minute, after the first run finished
    assert len(calls) == 1
    assert sorted(r is None for r in together) == [False, True] and later is None


async def test_on_sqlite_every_fire_runs(settings: Settings) -> None:
    wrapped = once_per_schedule("prune_expired", parse_cron("* * * * *"), prune_job)
    async with open_container(settings) as container:
        assert await wrapped(container) == 0
        assert await wrapped(container) == 0


async def test_copy_store_moves_rows_and_vectors_both_ways(
    settings: Settings, pg_url: str, tmp_path: Path, clock: FrozenClock
) -> None:
    lazy, _ = ready_fake()
    source = tmp_path / "source.db"
    local = settings.model_copy(update={"db": source})
    async with open_container(local, clock, embedder=lazy) as container:
        for i in range(30):
            await container.memories.append(
                "test", Layer.EPISODIC, f"tea note {i}", author="Ada" if i % 2 else None
            )
        await container.memories.learn("test", "user.editor", "helix")
        await container.memories.append(
            "test",
            Layer.EPISODIC,
            "tea party yesterday",
            occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        )
        assert container.indexer is not None
        await container.indexer.backfill(await lazy.wait(5))
        original = await container.repo.list_layer("test", Layer.EPISODIC, None, newest_first=False)

    there = await copy_between(f"sqlite://{source}", pg_url, batch=7)
    assert there.verified and (there.memories, there.embeddings) == (32, 32)
    back = await copy_between(pg_url, f"sqlite://{tmp_path / 'back.db'}")
    assert back.verified and (back.memories, back.embeddings) == (32, 32)

    on_pg = settings.model_copy(update={"database_url": pg_url})
    async with open_container(on_pg, clock, embedder=lazy) as container:
        copied = await container.repo.list_layer("test", Layer.EPISODIC, None, newest_first=False)
        assert copied == original  # ids, tiers, times, access counts, authors and dates kept
        assert sum(m.author == "Ada" for m in copied) == 15
        assert [m.dates for m in copied if m.dates] == ["2023-05-07"]
        assert [m.occurred_at for m in copied if m.occurred_at] == [
            datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        ]
        fresh = await container.memories.append("test", Layer.EPISODIC, "a new row after copy")
        assert fresh.memory.id > max(m.id for m in original)
    with pytest.raises(Exception, match="already holds"):
        await copy_between(f"sqlite://{source}", pg_url)
