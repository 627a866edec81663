"""Scheduled maintenance once per schedule across replicas: an advisory lock plus a claim."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession

__all__ = ["PostgresJobLeases"]


class PostgresJobLeases:
    """Grants a scheduled job's run for one schedule slot to exactly one replica.

    Two guards, because either alone falls short: `pg_try_advisory_lock` keeps two replicas
    from running a job at the same moment, and the claimed slot (in `meta`) keeps a replica
    whose timer fired a little later from running the job again once the first has finished.
    """

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    @asynccontextmanager
    async def claim(self, job: str, slot: datetime) -> AsyncIterator[str | None]:
        """Yield None when this replica runs `job` for `slot`, else why it skips.

        The claim is recorded before the job runs and released (deleted) if the job fails,
        so a failed run may be retried by the next fire.
        """
        name = f"memstrata:job:{job}"
        key = f"job:{job}:last_slot"
        stamp = aware(slot).isoformat(timespec="microseconds")
        async with self._session.read(f"claiming {job}") as conn:
            got = await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", name)
            if not got:
                yield "another replica is running it"
                return
            try:
                previous = await conn.fetchval("SELECT value FROM meta WHERE key = $1", key)
                if previous is not None and previous >= stamp:
                    yield f"already ran for {previous}"
                    return
                await self._record(conn, key, stamp)
                try:
                    yield None
                except BaseException:
                    await self._restore(conn, key, previous)
                    raise
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)

    @staticmethod
    async def _record(conn: Any, key: str, stamp: str) -> None:
        await conn.execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2)"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            key,
            stamp,
        )

    @staticmethod
    async def _restore(conn: Any, key: str, previous: str | None) -> None:
        if previous is None:
            await conn.execute("DELETE FROM meta WHERE key = $1", key)
        else:
            await PostgresJobLeases._record(conn, key, previous)
