"""SqliteScratchpadStore: the ScratchpadStore port on the scratchpad_snippets table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory_core.domain.knowledge import (
    PromotionReason,
    PromotionTarget,
    Snippet,
    SnippetDraft,
)
from memory_core.ports.knowledge import SnippetWrite
from memory_core.storage.records import RowReader, RowWriter, vector_to_bytes
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["SqliteScratchpadStore"]

_ROWS = RowReader(decode_time)
_WRITE = RowWriter(encode_time, flag=int)


class SqliteScratchpadStore:
    """Snippets per session; `use_seq` (per session) orders them for LRU eviction."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    async def _next_seq(self, session_id: str) -> int:
        rows = await self._session.fetch(
            "SELECT coalesce(max(use_seq), 0) FROM scratchpad_snippets WHERE session_id = ?",
            (session_id,),
        )
        return int(rows[0][0]) + 1

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
        stamp = encode_time(now)
        async with self._session.write("writing a scratchpad snippet"):
            seq = await self._next_seq(draft.session_id)
            rows = await self._session.fetch(
                "UPDATE scratchpad_snippets SET last_used_at = :now, use_seq = :seq,"
                " use_count = use_count + 1, salient = max(salient, :salient),"
                " user_id = coalesce(user_id, :user), tenant = coalesce(tenant, :tenant),"
                " promote_to = coalesce(:promote_to, promote_to),"
                " embedding = coalesce(:embedding, embedding),"
                " embed_model = CASE WHEN :embedding IS NULL THEN embed_model ELSE :model END"
                " WHERE session_id = :session AND norm_hash = :hash RETURNING *",
                {
                    "now": stamp,
                    "seq": seq,
                    "salient": int(draft.salient),
                    "user": draft.user,
                    "tenant": draft.tenant,
                    "promote_to": draft.promote_to,
                    "embedding": vector_to_bytes(vector),
                    "model": model_id,
                    "session": draft.session_id,
                    "hash": draft.norm_hash,
                },
            )
            created = not rows
            if created:
                rows = await self._session.fetch(
                    "INSERT INTO scratchpad_snippets (session_id, user_id, tenant, snippet,"
                    " norm_hash, embedding, embed_model, salient, promote_to, created_at,"
                    " last_used_at, use_seq, use_count)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                    _WRITE.snippet(draft, vector, model_id, now, seq),
                )
            evicted = await self._session.fetch(
                "DELETE FROM scratchpad_snippets WHERE id IN (SELECT id FROM scratchpad_snippets"
                " WHERE session_id = ? ORDER BY use_seq DESC LIMIT -1 OFFSET ?) RETURNING *",
                (draft.session_id, cap),
            )
        return SnippetWrite(
            snippet=_ROWS.snippet(rows[0]),
            created=created,
            evicted=[_ROWS.snippet(r) for r in evicted],
        )

    async def read(
        self, session_id: str, ids: Sequence[int] | None, now: datetime
    ) -> list[Snippet]:
        """Snippets of a session, most recently used first, each marked as used."""
        async with self._session.write("reading the scratchpad"):
            if ids is None:
                rows = await self._session.fetch(
                    "SELECT id FROM scratchpad_snippets WHERE session_id = ? ORDER BY use_seq",
                    (session_id,),
                )
            else:
                marks = ", ".join("?" for _ in ids)
                rows = await self._session.fetch(
                    f"SELECT id FROM scratchpad_snippets WHERE session_id = ? AND id IN ({marks})"
                    " ORDER BY use_seq",
                    (session_id, *ids),
                )
            found = [int(r[0]) for r in rows]
            base = await self._next_seq(session_id)
            # Oldest first gets the lowest new number: the relative order stays as it was.
            await self._session.db.executemany(
                "UPDATE scratchpad_snippets SET use_seq = ?, last_used_at = ?,"
                " use_count = use_count + 1 WHERE id = ?",
                [(base + i, encode_time(now), sid) for i, sid in enumerate(found)],
            )
            out = await self._session.fetch(
                "SELECT * FROM scratchpad_snippets WHERE session_id = ? ORDER BY use_seq DESC",
                (session_id,),
            )
        wanted = set(found)
        return [_ROWS.snippet(r) for r in out if r["id"] in wanted]

    async def get(self, session_id: str, snippet_id: int) -> Snippet | None:
        """One snippet, without marking it used."""
        async with self._session.read("reading a scratchpad snippet"):
            rows = await self._session.fetch(
                "SELECT * FROM scratchpad_snippets WHERE session_id = ? AND id = ?",
                (session_id, snippet_id),
            )
        return _ROWS.snippet(rows[0]) if rows else None

    async def peers(
        self, user: str | None, tenant: str | None, model_id: str | None
    ) -> list[tuple[Snippet, Vector | None]]:
        """Snippets of this user, else of this tenant, with vectors of `model_id`."""
        if user is not None:
            where, owner = "user_id = ?", user
        elif tenant is not None:
            where, owner = "tenant = ?", tenant
        else:
            return []
        async with self._session.read("reading related snippets"):
            rows = await self._session.fetch(
                f"SELECT * FROM scratchpad_snippets WHERE {where} ORDER BY id", (owner,)
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
        async with self._session.write("recording a promotion") as db:
            await db.executemany(
                "UPDATE scratchpad_snippets SET promoted_to = ?, promoted_ref = ?,"
                " promoted_reason = ?, promoted_at = ? WHERE id = ?",
                [(target.value, ref, reason.value, encode_time(now), i) for i in ids],
            )

    async def delete(
        self, *, session_id: str | None, user: str | None, ids: Sequence[int] | None
    ) -> list[int]:
        """Delete snippets of a session (these ids, or all), or every snippet of a user."""
        column = "session_id" if session_id is not None else "user_id"
        sql = f"DELETE FROM scratchpad_snippets WHERE {column} = ?"
        params: list[str | int | None] = [session_id if session_id is not None else user]
        if ids is not None:
            sql += f" AND id IN ({', '.join('?' for _ in ids)})"
            params.extend(ids)
        async with self._session.write("deleting scratchpad snippets"):
            rows = await self._session.fetch(sql + " RETURNING id", params)
        return sorted(int(r[0]) for r in rows)
