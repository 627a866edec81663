"""PostgresScratchpadStore: the ScratchpadStore port on PostgreSQL (same semantics as SQLite)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_core.domain.knowledge import PromotionReason, PromotionTarget, Snippet, SnippetDraft
from memory_core.ports.embeddings import Vector
from memory_core.ports.knowledge import SnippetWrite
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession
from memory_core.storage.records import RowReader, RowWriter, vector_to_bytes

__all__ = ["PostgresScratchpadStore", "lock_text"]

_ROWS = RowReader(aware)
_WRITE = RowWriter(aware)


async def lock_text(conn: Any, name: str) -> None:
    """A transaction advisory lock on a name: writers of one name take turns, across replicas.

    SQLite's BEGIN IMMEDIATE serialises every writer of the file; under READ COMMITTED two
    writers could both read "absent" (or the same counter) and collide. Locking the name the
    write is about restores the SQLite outcome without serialising unrelated writes.
    """
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", name)


class PostgresScratchpadStore:
    """Snippets per session; `use_seq` (per session) orders them for LRU eviction."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    @staticmethod
    async def _next_seq(conn: Any, session_id: str) -> int:
        value = await conn.fetchval(
            "SELECT coalesce(max(use_seq), 0) FROM scratchpad_snippets WHERE session_id = $1",
            session_id,
        )
        return int(value) + 1

    async def write(
        self,
        draft: SnippetDraft,
        vector: Vector | None,
        model_id: str | None,
        now: datetime,
        *,
        cap: int,
    ) -> SnippetWrite:
        """Add or refresh a snippet and evict the least recently used beyond `cap`."""
        stamp = aware(now)
        blob = vector_to_bytes(vector)
        async with self._session.write("writing a scratchpad snippet") as conn:
            await lock_text(conn, f"scratchpad\x1f{draft.session_id}")
            seq = await self._next_seq(conn, draft.session_id)
            row = await conn.fetchrow(
                "UPDATE scratchpad_snippets SET last_used_at = $1, use_seq = $2,"
                " use_count = use_count + 1, salient = salient OR $3,"
                " user_id = coalesce(user_id, $4), tenant = coalesce(tenant, $5),"
                " promote_to = coalesce($6, promote_to),"
                " embedding = coalesce($7, embedding),"
                " embed_model = CASE WHEN $7::bytea IS NULL THEN embed_model ELSE $8 END"
                " WHERE session_id = $9 AND norm_hash = $10 RETURNING *",
                stamp,
                seq,
                draft.salient,
                draft.user,
                draft.tenant,
                draft.promote_to,
                blob,
                model_id,
                draft.session_id,
                draft.norm_hash,
            )
            created = row is None
            if created:
                row = await conn.fetchrow(
                    "INSERT INTO scratchpad_snippets (session_id, user_id, tenant, snippet,"
                    " norm_hash, embedding, embed_model, salient, promote_to, created_at,"
                    " last_used_at, use_seq, use_count)"
                    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *",
                    *_WRITE.snippet(draft, vector, model_id, now, seq),
                )
            evicted = await conn.fetch(
                "DELETE FROM scratchpad_snippets WHERE id IN (SELECT id FROM scratchpad_snippets"
                " WHERE session_id = $1 ORDER BY use_seq DESC OFFSET $2) RETURNING *",
                draft.session_id,
                cap,
            )
        return SnippetWrite(
            snippet=_ROWS.snippet(row), created=created, evicted=[_ROWS.snippet(r) for r in evicted]
        )

    async def read(
        self, session_id: str, ids: Sequence[int] | None, now: datetime
    ) -> list[Snippet]:
        """Snippets of a session, most recently used first, each marked as used."""
        async with self._session.write("reading the scratchpad") as conn:
            await lock_text(conn, f"scratchpad\x1f{session_id}")
            if ids is None:
                rows = await conn.fetch(
                    "SELECT id FROM scratchpad_snippets WHERE session_id = $1 ORDER BY use_seq",
                    session_id,
                )
            else:
                rows = await conn.fetch(
                    "SELECT id FROM scratchpad_snippets WHERE session_id = $1"
                    " AND id = ANY($2::bigint[]) ORDER BY use_seq",
                    session_id,
                    [int(i) for i in ids],
                )
            found = [int(r[0]) for r in rows]
            base = await self._next_seq(conn, session_id)
            # Oldest first gets the lowest new number: the relative order stays as it was.
            await conn.execute(
                "UPDATE scratchpad_snippets AS s SET use_seq = $1 + u.n - 1, last_used_at = $2,"
                " use_count = s.use_count + 1"
                " FROM unnest($3::bigint[]) WITH ORDINALITY AS u(id, n) WHERE s.id = u.id",
                base,
                aware(now),
                found,
            )
            out = await conn.fetch(
                "SELECT * FROM scratchpad_snippets WHERE session_id = $1 ORDER BY use_seq DESC",
                session_id,
            )
        wanted = set(found)
        return [_ROWS.snippet(r) for r in out if r["id"] in wanted]

    async def get(self, session_id: str, snippet_id: int) -> Snippet | None:
        """One snippet, without marking it used."""
        async with self._session.read("reading a scratchpad snippet") as conn:
            row = await conn.fetchrow(
                "SELECT * FROM scratchpad_snippets WHERE session_id = $1 AND id = $2",
                session_id,
                snippet_id,
            )
        return _ROWS.snippet(row) if row is not None else None

    async def peers(
        self, user: str | None, tenant: str | None, model_id: str | None
    ) -> list[tuple[Snippet, Vector | None]]:
        """Snippets of this user, else of this tenant, with vectors of `model_id`."""
        if user is not None:
            where, owner = "user_id = $1", user
        elif tenant is not None:
            where, owner = "tenant = $1", tenant
        else:
            return []
        async with self._session.read("reading related snippets") as conn:
            rows = await conn.fetch(
                f"SELECT * FROM scratchpad_snippets WHERE {where} ORDER BY id", owner
            )
        return [(_ROWS.snippet(r), _ROWS.vector(r, model_id)) for r in rows]

    async def mark_promoted(
        self,
        ids: Sequence[int],
        target: PromotionTarget,
        ref: str,
        reason: PromotionReason,
        now: datetime,
    ) -> None:
        """Record where snippets went (the latest promotion of a snippet wins)."""
        async with self._session.write("recording a promotion") as conn:
            await conn.execute(
                "UPDATE scratchpad_snippets SET promoted_to = $1, promoted_ref = $2,"
                " promoted_reason = $3, promoted_at = $4 WHERE id = ANY($5::bigint[])",
                target.value,
                ref,
                reason.value,
                aware(now),
                [int(i) for i in ids],
            )

    async def delete(
        self, *, session_id: str | None, user: str | None, ids: Sequence[int] | None
    ) -> list[int]:
        """Delete snippets of a session (these ids, or all), or every snippet of a user."""
        column = "session_id" if session_id is not None else "user_id"
        sql = f"DELETE FROM scratchpad_snippets WHERE {column} = $1"
        params: list[Any] = [session_id if session_id is not None else user]
        if ids is not None:
            sql += " AND id = ANY($2::bigint[])"
            params.append([int(i) for i in ids])
        async with self._session.write("deleting scratchpad snippets") as conn:
            rows = await conn.fetch(sql + " RETURNING id", *params)
        return sorted(int(r[0]) for r in rows)
