"""PostgresPreferenceStore and PostgresPlaybookStore: per-user rules and trajectories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_core.domain.knowledge import Playbook, PlaybookDraft, Preference, PreferenceDraft
from memory_core.ports.embeddings import Vector
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.scratchpad import lock_text
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.records import RowReader, RowWriter, vector_to_bytes

__all__ = ["PostgresPlaybookStore", "PostgresPreferenceStore"]

_ROWS = RowReader(aware)
_WRITE = RowWriter(aware)


async def _set_vectors(
    session: PostgresSession, table: str, items: Sequence[tuple[int, Vector]], model_id: str
) -> None:
    if not items:
        return
    async with session.write(f"storing {table} vectors") as conn:
        await conn.execute(
            f"UPDATE {table} AS t SET embedding = u.embedding, embed_model = $3"
            " FROM unnest($1::bigint[], $2::bytea[]) AS u(id, embedding) WHERE t.id = u.id",
            [int(i) for i, _ in items],
            [vector_to_bytes(v) for _, v in items],
            model_id,
        )


class PostgresPreferenceStore:
    """Rules per user in user_preferences, unique by (user, key)."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def upsert(
        self, draft: PreferenceDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Preference, str | None]:
        """Insert or replace the rule under (user, key)."""
        async with self._session.write("storing a preference") as conn:
            # Two writers of one rule take turns, so each reports the value it replaced.
            await lock_text(conn, f"preference\x1f{draft.user}\x1f{draft.key}")
            old = await conn.fetchval(
                "SELECT value FROM user_preferences WHERE user_id = $1 AND key = $2",
                draft.user,
                draft.key,
            )
            row = await conn.fetchrow(
                "INSERT INTO user_preferences (user_id, key, value, flow_id, origin, embedding,"
                " embed_model, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                " ON CONFLICT (user_id, key) DO UPDATE SET value = EXCLUDED.value,"
                " flow_id = EXCLUDED.flow_id, origin = EXCLUDED.origin,"
                " embedding = EXCLUDED.embedding, embed_model = EXCLUDED.embed_model,"
                " updated_at = EXCLUDED.updated_at RETURNING *",
                *_WRITE.preference(draft, vector, model_id, now),
            )
        return _ROWS.preference(row), (str(old) if old is not None else None)

    async def get(self, user: str, key: str) -> Preference | None:
        """The rule under this key."""
        async with self._session.read("reading a preference") as conn:
            row = await conn.fetchrow(
                "SELECT * FROM user_preferences WHERE user_id = $1 AND key = $2", user, key
            )
        return _ROWS.preference(row) if row is not None else None

    async def list_user(
        self, user: str, model_id: str | None
    ) -> list[tuple[Preference, Vector | None]]:
        """Every rule of a user with its vector by `model_id`, by key in byte order."""
        async with self._session.read("reading preferences") as conn:
            rows = await conn.fetch(
                'SELECT * FROM user_preferences WHERE user_id = $1 ORDER BY key COLLATE "C"',
                user,
            )
        return [(_ROWS.preference(r), _ROWS.vector(r, model_id)) for r in rows]

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of rules written without one."""
        await _set_vectors(self._session, "user_preferences", items, model_id)

    async def delete(self, user: str, keys: Sequence[str] | None) -> list[str]:
        """Delete rules of a user (these keys, or all); returns the deleted keys."""
        sql = "DELETE FROM user_preferences WHERE user_id = $1"
        params: list[Any] = [user]
        if keys is not None:
            sql += " AND key = ANY($2::text[])"
            params.append(list(keys))
        async with self._session.write("deleting preferences") as conn:
            rows = await conn.fetch(sql + " RETURNING key", *params)
        return sorted(str(r[0]) for r in rows)


class PostgresPlaybookStore:
    """Trajectories per user in playbooks."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    async def add(
        self, draft: PlaybookDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Playbook, bool]:
        """Record a trajectory, or return the identical one already recorded."""
        async with self._session.write("recording a playbook") as conn:
            # ON CONFLICT DO NOTHING waits for a concurrent insert of the same trajectory to
            # commit; the SELECT (a new statement, a new READ COMMITTED snapshot) then sees it.
            row = await conn.fetchrow(
                "INSERT INTO playbooks (user_id, flow, user_query, slots, tool_calls, outcome,"
                " record_hash, embedding, embed_model, created_at)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                " ON CONFLICT (user_id, record_hash) DO NOTHING RETURNING *",
                *_WRITE.playbook(draft, vector, model_id, now),
            )
            created = row is not None
            if not created:
                row = await conn.fetchrow(
                    "SELECT * FROM playbooks WHERE user_id = $1 AND record_hash = $2",
                    draft.user,
                    draft.record_hash,
                )
        return _ROWS.playbook(row), created

    async def list_user(
        self, user: str, flow: str | None, model_id: str | None
    ) -> list[tuple[Playbook, Vector | None]]:
        """Playbooks of a user (optionally of one flow) with vectors by `model_id`."""
        sql, params = "SELECT * FROM playbooks WHERE user_id = $1", [user]
        if flow is not None:
            sql += " AND flow = $2"
            params.append(flow)
        async with self._session.read("reading playbooks") as conn:
            rows = await conn.fetch(sql + " ORDER BY id", *params)
        return [(_ROWS.playbook(r), _ROWS.vector(r, model_id)) for r in rows]

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of playbooks recorded without one."""
        await _set_vectors(self._session, "playbooks", items, model_id)

    async def delete(self, user: str, ids: Sequence[int] | None) -> list[int]:
        """Delete playbooks of a user (these ids, or all); returns the deleted ids."""
        sql = "DELETE FROM playbooks WHERE user_id = $1"
        params: list[Any] = [user]
        if ids is not None:
            sql += " AND id = ANY($2::bigint[])"
            params.append([int(i) for i in ids])
        async with self._session.write("deleting playbooks") as conn:
            rows = await conn.fetch(sql + " RETURNING id", *params)
        return sorted(int(r[0]) for r in rows)
