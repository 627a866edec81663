"""With MEMSTRATA_DATABASE_URL set, every store is in PostgreSQL and replicas share all of it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import structlog

from memory_core.domain.conversation import EntryType, Role
from server.container import open_container
from server.settings import Settings
from tests.fakes import FrozenClock, ready_fake


def replica(settings: Settings, pg_url: str, folder: Path, name: str) -> Settings:
    return settings.model_copy(update={"database_url": pg_url, "db": folder / f"{name}.db"})


async def test_replicas_share_conversations_and_knowledge_and_no_sqlite_file_is_made(
    settings: Settings, pg_url: str, tmp_path: Path, clock: FrozenClock
) -> None:
    a = replica(settings, pg_url, tmp_path, "a")
    b = replica(settings, pg_url, tmp_path, "b")
    lazy, _ = ready_fake()
    with structlog.testing.capture_logs() as logs:
        async with (
            open_container(a, clock, embedder=lazy) as one,
            open_container(b, clock, embedder=lazy) as two,
        ):
            await one.conversations.start("p", "s1")

            async def say(container_n: int, i: int) -> None:
                c = one if container_n == 0 else two
                await c.conversations.add_entry(
                    "p", "s1", type=EntryType.MESSAGE, content=f"m{container_n}.{i}", role=Role.USER
                )

            # Both replicas append to one session at once: numbers stay 1..N, none repeated.
            await asyncio.gather(*(say(n, i) for i in range(8) for n in (0, 1)))
            exported = await two.conversations.export("p", "s1")
            assert [e.id for e in exported.entries] == list(range(1, 17))
            assert len({e.content for e in exported.entries}) == 16

            await one.knowledge.preferences.update("ann", "tone", "short answers")
            got = await two.knowledge.preferences.get("ann", "tone")
            assert got is not None and got.value == "short answers"

            await one.knowledge.scratchpad.write("s1", "the invoice run is on Fridays", user="ann")
            assert [s.text for s in await two.knowledge.scratchpad.read("s1")] == [
                "the invoice run is on Fridays"
            ]

            await one.knowledge.business.ingest("acme", "policy.md", "Refunds within 30 days.")
            found = await two.knowledge.business.search("acme", "Refunds within 30 days.")
            assert "Refunds" in found.hits[0].chunk.text and found.hits[0].vector_rank == 1
            # Replica two has cached acme's vector matrix; a write by one must invalidate it.
            await one.knowledge.business.ingest("acme", "policy.md", "Returns within 60 days.")
            again = await two.knowledge.business.search("acme", "Returns within 60 days.")
            assert "Returns" in again.hits[0].chunk.text
            assert again.hits[0].vector_rank is not None  # found by the rebuilt matrix too
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()
    served = [e for e in logs if e["event"] == "store.backend"]
    assert served and all(e["backend"] == "postgres" for e in served)
    assert {"conversations", "scratchpad", "preferences", "playbooks", "documents"} <= set(
        served[0]["stores"]
    )
    conn = await asyncpg.connect(pg_url)
    try:
        counts = {
            table: await conn.fetchval(f"SELECT count(*) FROM {table}")
            for table in (
                "conversation_entries",
                "user_preferences",
                "scratchpad_snippets",
                "knowledge_chunks",
            )
        }
    finally:
        await conn.close()
    assert all(n > 0 for n in counts.values()), counts


async def test_a_session_exported_from_sqlite_imports_into_postgres_unchanged(
    settings: Settings, pg_url: str, clock: FrozenClock
) -> None:
    on_pg = settings.model_copy(update={"database_url": pg_url})
    async with open_container(settings, clock) as lite, open_container(on_pg, clock) as pg:
        svc = lite.conversations
        await svc.start("p", "s")
        for i in range(4):
            clock.advance(minutes=1)
            await svc.add_entry(
                "p",
                "s",
                type=EntryType.TOOL_CALL,
                tool_name="lookup",
                arguments={"z": i, "a": [1, "ü"], "m": {"y": None, "b": 1.5}},
            )
        await svc.finalize_exchange("p", "s", "what ran?", "four lookups")
        await svc.cache_put("p", "s", "lookup", {"q": "x", "a": 1}, {"rows": [1, 2]}, duration=3)
        await svc.update_config("p", "s", {"recent_window": 2})
        exported = await svc.export("p", "s")
        await pg.conversations.import_("p", exported.model_dump(mode="json"))
        back = await pg.conversations.export("p", "s")
        assert back.model_dump_json() == exported.model_dump_json()
