"""SqlitePreferenceStore and SqlitePlaybookStore: per-user rules and trajectories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory_core.domain.knowledge import Playbook, PlaybookDraft, Preference, PreferenceDraft
from memory_core.storage.records import RowReader, RowWriter, vector_to_bytes
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["SqlitePlaybookStore", "SqlitePreferenceStore"]

_ROWS = RowReader(decode_time)
_WRITE = RowWriter(encode_time, flag=int)


class SqlitePreferenceStore:
    """Rules per user in user_preferences, unique by (user, key)."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def upsert(
        self, draft: PreferenceDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Preference, str | None]:
        """Insert or replace the rule under (user, key)."""
        async with self._session.write("storing a preference"):
            old = await self._session.fetch(
                "SELECT value FROM user_preferences WHERE user_id = ? AND key = ?",
                (draft.user, draft.key),
            )
            rows = await self._session.fetch(
                "INSERT INTO user_preferences (user_id, key, value, flow_id, origin, embedding,"
                " embed_model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value,"
                " flow_id = excluded.flow_id, origin = excluded.origin,"
                " embedding = excluded.embedding, embed_model = excluded.embed_model,"
                " updated_at = excluded.updated_at RETURNING *",
                _WRITE.preference(draft, vector, model_id, now),
            )
        return _ROWS.preference(rows[0]), (str(old[0][0]) if old else None)

    async def get(self, user: str, key: str) -> Preference | None:
        """The rule under this key."""
        async with self._session.read("reading a preference"):
            rows = await self._session.fetch(
                "SELECT * FROM user_preferences WHERE user_id = ? AND key = ?", (user, key)
            )
        return _ROWS.preference(rows[0]) if rows else None

    async def list_user(
        self, user: str, model_id: str | None
    ) -> list[tuple[Preference, Vector | None]]:
        """Every rule of a user with its vector by `model_id`."""
        async with self._session.read("reading preferences"):
            rows = await self._session.fetch(
                "SELECT * FROM user_preferences WHERE user_id = ? ORDER BY key", (user,)
            )
        return [(_ROWS.preference(r), _ROWS.vector(r, model_id)) for r in rows]

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of rules written without one."""
        async with self._session.write("storing preference vectors") as db:
            await db.executemany(
                "UPDATE user_preferences SET embedding = ?, embed_model = ? WHERE id = ?",
                [(vector_to_bytes(v), model_id, i) for i, v in items],
            )

    async def delete(self, user: str, keys: Sequence[str] | None) -> list[str]:
        """Delete rules of a user (these keys, or all); returns the deleted keys."""
        sql, params = "DELETE FROM user_preferences WHERE user_id = ?", [user]
        if keys is not None:
            sql += f" AND key IN ({', '.join('?' for _ in keys)})"
            params.extend(keys)
        async with self._session.write("deleting preferences"):
            rows = await self._session.fetch(sql + " RETURNING key", params)
        return sorted(str(r[0]) for r in rows)


class SqlitePlaybookStore:
    """Trajectories per user in playbooks."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def add(
        self, draft: PlaybookDraft, vector: Vector | None, model_id: str | None, now: datetime
    ) -> tuple[Playbook, bool]:
        """Record a trajectory, or return the identical one already recorded."""
        async with self._session.write("recording a playbook"):
            rows = await self._session.fetch(
                "INSERT INTO playbooks (user_id, flow, user_query, slots, tool_calls, outcome,"
                " record_hash, embedding, embed_model, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (user_id, record_hash) DO NOTHING RETURNING *",
                _WRITE.playbook(draft, vector, model_id, now),
            )
            created = bool(rows)
            if not created:
                rows = await self._session.fetch(
                    "SELECT * FROM playbooks WHERE user_id = ? AND record_hash = ?",
                    (draft.user, draft.record_hash),
                )
        return _ROWS.playbook(rows[0]), created

    async def list_user(
        self, user: str, flow: str | None, model_id: str | None
    ) -> list[tuple[Playbook, Vector | None]]:
        """Playbooks of a user (optionally of one flow) with vectors by `model_id`."""
        sql, params = "SELECT * FROM playbooks WHERE user_id = ?", [user]
        if flow is not None:
            sql += " AND flow = ?"
            params.append(flow)
        async with self._session.read("reading playbooks"):
            rows = await self._session.fetch(sql + " ORDER BY id", params)
        return [(_ROWS.playbook(r), _ROWS.vector(r, model_id)) for r in rows]

    async def set_vectors(self, items: Sequence[tuple[int, Vector]], model_id: str) -> None:
        """Store vectors of playbooks recorded without one."""
        async with self._session.write("storing playbook vectors") as db:
            await db.executemany(
                "UPDATE playbooks SET embedding = ?, embed_model = ? WHERE id = ?",
                [(vector_to_bytes(v), model_id, i) for i, v in items],
            )

    async def delete(self, user: str, ids: Sequence[int] | None) -> list[int]:
        """Delete playbooks of a user (these ids, or all); returns the deleted ids."""
        sql = "DELETE FROM playbooks WHERE user_id = ?"
        params: list[str | int] = [user]
        if ids is not None:
            sql += f" AND id IN ({', '.join('?' for _ in ids)})"
            params.extend(ids)
        async with self._session.write("deleting playbooks"):
            rows = await self._session.fetch(sql + " RETURNING id", params)
        return sorted(int(r[0]) for r in rows)
