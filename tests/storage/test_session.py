import asyncio

import aiosqlite

from memory_core.storage.sqlite import SqliteSession


async def test_sessions_on_one_connection_never_interleave_transactions(
    db: aiosqlite.Connection,
) -> None:
    a, b = SqliteSession(db), SqliteSession(db)

    async def write(session: SqliteSession, key: str) -> None:
        async with session.write("test") as conn:
            await conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (key,))
            await asyncio.sleep(0)  # let the other writer try to start its transaction
            await conn.execute("UPDATE meta SET value = '2' WHERE key = ?", (key,))

    await asyncio.gather(*(write(s, f"k{i}") for i, s in enumerate([a, b] * 5)))
    async with a.read("check"):
        rows = await a.fetch("SELECT count(*) FROM meta WHERE value = '2'")
    assert rows[0][0] == 10
