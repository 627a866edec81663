"""PostgresConversationStore: the ConversationStore port on PostgreSQL (same semantics as SQLite).

Every write locks the session row first (`SELECT ... FOR UPDATE`): concurrent writers of one
session, in this process or another replica, take turns, as under SQLite's file-wide write
lock, so per-session numbers are never handed out twice and a summary never double-counts.
Writers of different sessions do not wait for each other.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from memory_core.domain.conversation import (
    CachedResult,
    Entry,
    EntryDraft,
    Exchange,
    ExchangeOutcome,
    PendingSummary,
    SessionExport,
    SessionInfo,
    Summary,
    SummaryDraft,
    canonical_json,
)
from memory_core.errors import SessionNotFoundError
from memory_core.ports.conversations import FoldFn
from memory_core.storage.conversation_steps import (
    exchange_outcome,
    fold_overflow,
    new_exchange,
    session_exists,
    settles_pending,
)
from memory_core.storage.postgres.rows import aware
from memory_core.storage.postgres.session import PostgresSession, rowcount
from memory_core.storage.records import RowReader, RowWriter, json_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory_core.storage.postgres.change_marks import PostgresChangeMarks

__all__ = ["PostgresConversationStore"]

_ROWS = RowReader(aware)
_WRITE = RowWriter(aware)


def _opt(value: datetime | None) -> datetime | None:
    return aware(value) if value is not None else None


_SCOPE = "project = $1 AND session_id = $2"
# Ties broken in byte order, as SQLite's BINARY collation sorts (not the database's locale).
_CACHE_ORDER = 'ORDER BY created_at, cache_key COLLATE "C"'


_IMPORT_SESSION = (
    "INSERT INTO conversation_sessions (project, session_id, created_at, updated_at, config,"
    " qa_summary, qa_summary_from, qa_summary_until, next_entry, next_summary, next_exchange)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING"
)
# In the order of RowWriter.session_rows.
_IMPORT_ROWS = (
    "INSERT INTO conversation_summaries (project, session_id, summary_no, text, entry_ids,"
    " token_count, original_tokens, ratio, covers_from, covers_until, source, created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    "INSERT INTO conversation_entries (project, session_id, entry_no, type, role, content,"
    " tool_name, arguments, source, is_error, created_at, token_count, compressed, summary_no)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    "INSERT INTO conversation_exchanges (project, session_id, exchange_no, question, answer,"
    " answer_shortened, created_at, folded) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    "INSERT INTO tool_result_cache (project, session_id, cache_key, tool_name, parameters,"
    " result, duration, remaining, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
)
# A new entry's row (RowWriter.entry), as an import writes it.
_ENTRY_ROW = _IMPORT_ROWS[1]


class PostgresConversationStore:
    """Conversation memory in the tables of migrations/postgres/0003."""

    def __init__(self, session: PostgresSession) -> None:
        self._s = session

    @staticmethod
    async def _require(conn: Any, project: str, session_id: str, *, lock: bool) -> Any:
        """The session row (locked for this transaction when `lock`), else SessionNotFoundError."""
        row = await conn.fetchrow(
            f"SELECT * FROM conversation_sessions WHERE {_SCOPE}" + (" FOR UPDATE" if lock else ""),
            project,
            session_id,
        )
        if row is None:
            raise SessionNotFoundError(session_id, project)
        return row

    async def create_session(
        self, project: str, session_id: str, now: datetime
    ) -> tuple[SessionInfo, bool]:
        """See ConversationStore.create_session."""
        async with self._s.write("create_session") as conn:
            status = await conn.execute(
                "INSERT INTO conversation_sessions (project, session_id, created_at, updated_at)"
                " VALUES ($1, $2, $3, $3) ON CONFLICT DO NOTHING",
                project,
                session_id,
                aware(now),
            )
            row = await self._require(conn, project, session_id, lock=False)
        return _ROWS.session(row), rowcount(status) == 1

    async def get_session(self, project: str, session_id: str) -> SessionInfo:
        """See ConversationStore.get_session."""
        async with self._s.read("get_session") as conn:
            return _ROWS.session(await self._require(conn, project, session_id, lock=False))

    async def list_sessions(self, project: str, limit: int) -> list[SessionInfo]:
        """See ConversationStore.list_sessions."""
        async with self._s.read("list_sessions") as conn:
            rows = await conn.fetch(
                "SELECT * FROM conversation_sessions WHERE project = $1"
                ' ORDER BY updated_at DESC, session_id COLLATE "C" LIMIT $2',
                project,
                limit,
            )
        return [_ROWS.session(r) for r in rows]

    async def add_entry(
        self, project: str, session_id: str, draft: EntryDraft, now: datetime
    ) -> Entry:
        """See ConversationStore.add_entry."""
        stamp = aware(now)
        async with self._s.write("add_entry") as conn:
            row = await self._require(conn, project, session_id, lock=True)
            number = row["next_entry"]
            await conn.execute(
                "INSERT INTO conversation_entries (project, session_id, entry_no, type, role,"
                " content, tool_name, arguments, source, is_error, created_at, token_count)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                project,
                session_id,
                number,
                draft.type.value,
                draft.role.value,
                draft.content,
                draft.tool_name,
                json_text(draft.arguments) if draft.arguments is not None else None,
                draft.source,
                draft.is_error,
                stamp,
                draft.token_count,
            )
            await conn.execute(
                "UPDATE conversation_sessions SET next_entry = next_entry + 1, updated_at = $3"
                f" WHERE {_SCOPE}",
                project,
                session_id,
                stamp,
            )
        return Entry(id=number, timestamp=now, **draft.model_dump())

    async def add_entries(
        self, project: str, session_id: str, drafts: Sequence[EntryDraft], now: datetime
    ) -> list[Entry]:
        """See ConversationStore.add_entries."""
        if not drafts:
            return []
        async with self._s.write("add_entries") as conn:
            row = await self._require(conn, project, session_id, lock=True)
            first = int(row["next_entry"])
            entries = [
                Entry(id=first + n, timestamp=now, **d.model_dump()) for n, d in enumerate(drafts)
            ]
            await conn.executemany(
                _ENTRY_ROW, [_WRITE.entry(project, session_id, e) for e in entries]
            )
            await conn.execute(
                "UPDATE conversation_sessions SET next_entry = next_entry + $3, updated_at = $4"
                f" WHERE {_SCOPE}",
                project,
                session_id,
                len(drafts),
                aware(now),
            )
        return entries

    async def entries(self, project: str, session_id: str, *, active_only: bool) -> list[Entry]:
        """See ConversationStore.entries."""
        only = " AND NOT compressed" if active_only else ""
        async with self._s.snapshot("entries") as conn:
            await self._require(conn, project, session_id, lock=False)
            rows = await conn.fetch(
                f"SELECT * FROM conversation_entries WHERE {_SCOPE}{only} ORDER BY entry_no",
                project,
                session_id,
            )
        return [_ROWS.entry(r) for r in rows]

    async def summaries(self, project: str, session_id: str) -> list[Summary]:
        """See ConversationStore.summaries."""
        async with self._s.snapshot("summaries") as conn:
            await self._require(conn, project, session_id, lock=False)
            rows = await conn.fetch(
                f"SELECT * FROM conversation_summaries WHERE {_SCOPE} ORDER BY summary_no",
                project,
                session_id,
            )
        return [_ROWS.summary(r) for r in rows]

    async def exchanges(
        self, project: str, session_id: str, *, active_only: bool
    ) -> list[Exchange]:
        """See ConversationStore.exchanges."""
        only = " AND NOT folded" if active_only else ""
        async with self._s.snapshot("exchanges") as conn:
            await self._require(conn, project, session_id, lock=False)
            rows = await conn.fetch(
                f"SELECT * FROM conversation_exchanges WHERE {_SCOPE}{only} ORDER BY exchange_no",
                project,
                session_id,
            )
        return [_ROWS.exchange(r) for r in rows]

    async def apply_summary(
        self, project: str, session_id: str, draft: SummaryDraft, now: datetime
    ) -> Summary | None:
        """See ConversationStore.apply_summary."""
        ids = [int(i) for i in draft.entry_ids]
        async with self._s.write("apply_summary") as conn:
            row = await self._require(conn, project, session_id, lock=True)
            found = await conn.fetchval(
                f"SELECT count(*) FROM conversation_entries WHERE {_SCOPE} AND NOT compressed"
                " AND entry_no = ANY($3::int[])",
                project,
                session_id,
                ids,
            )
            if found != len(set(ids)):
                return None
            stored = draft.stored(row["next_summary"], now)
            await conn.execute(
                "INSERT INTO conversation_summaries (project, session_id, summary_no, text,"
                " entry_ids, token_count, original_tokens, ratio, covers_from, covers_until,"
                " source, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                *_WRITE.summary(project, session_id, stored),
            )
            await conn.execute(
                "UPDATE conversation_entries SET compressed = true, summary_no = $3"
                f" WHERE {_SCOPE} AND entry_no = ANY($4::int[])",
                project,
                session_id,
                stored.id,
                ids,
            )
            clear_pending = settles_pending(row["pending_summary"], ids)
            await conn.execute(
                "UPDATE conversation_sessions SET next_summary = next_summary + 1, updated_at = $3"
                + (", pending_summary = NULL" if clear_pending else "")
                + f" WHERE {_SCOPE}",
                project,
                session_id,
                aware(now),
            )
        return stored

    async def set_pending(
        self, project: str, session_id: str, pending: PendingSummary | None
    ) -> None:
        """See ConversationStore.set_pending."""
        async with self._s.write("set_pending") as conn:
            await self._require(conn, project, session_id, lock=True)
            await conn.execute(
                f"UPDATE conversation_sessions SET pending_summary = $3 WHERE {_SCOPE}",
                project,
                session_id,
                pending.model_dump_json() if pending else None,
            )

    async def set_config(
        self, project: str, session_id: str, config: dict[str, JsonValue], now: datetime
    ) -> None:
        """See ConversationStore.set_config."""
        async with self._s.write("set_config") as conn:
            await self._require(conn, project, session_id, lock=True)
            await conn.execute(
                f"UPDATE conversation_sessions SET config = $3, updated_at = $4 WHERE {_SCOPE}",
                project,
                session_id,
                canonical_json(config),
                aware(now),
            )

    async def finalize_exchange(
        self,
        project: str,
        session_id: str,
        exchange: tuple[str, str, bool],
        now: datetime,
        max_active: int,
        fold: FoldFn,
    ) -> ExchangeOutcome:
        """See ConversationStore.finalize_exchange."""
        async with self._s.write("finalize_exchange") as conn:
            row = await self._require(conn, project, session_id, lock=True)
            stored = new_exchange(row["next_exchange"], exchange, now)
            await conn.execute(
                "INSERT INTO conversation_exchanges (project, session_id, exchange_no, question,"
                " answer, answer_shortened, created_at, folded)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                *_WRITE.exchange(project, session_id, stored),
            )
            active = [
                _ROWS.exchange(r)
                for r in await conn.fetch(
                    f"SELECT * FROM conversation_exchanges WHERE {_SCOPE} AND NOT folded"
                    " ORDER BY exchange_no",
                    project,
                    session_id,
                )
            ]
            span = (row["qa_summary_from"], row["qa_summary_until"])
            qa = fold_overflow(active, max_active, (row["qa_summary"], *span), fold)
            if qa.overflow:
                await conn.execute(
                    "UPDATE conversation_exchanges SET folded = true"
                    f" WHERE {_SCOPE} AND exchange_no <= $3",
                    project,
                    session_id,
                    qa.overflow[-1].id,
                )
            await conn.execute(
                "UPDATE conversation_sessions SET next_exchange = next_exchange + 1,"
                " qa_summary = $3, qa_summary_from = $4, qa_summary_until = $5, updated_at = $6"
                f" WHERE {_SCOPE}",
                project,
                session_id,
                qa.summary,
                _opt(qa.covers_from),
                _opt(qa.covers_until),
                aware(now),
            )
            await conn.execute(
                f"UPDATE tool_result_cache SET remaining = remaining - 1 WHERE {_SCOPE}",
                project,
                session_id,
            )
            expired = await conn.fetch(
                f"DELETE FROM tool_result_cache WHERE {_SCOPE} AND remaining <= 0 RETURNING *",
                project,
                session_id,
            )
        return exchange_outcome(stored, qa, (_ROWS.cached(r) for r in expired))

    async def replace_qa_summary(
        self, project: str, session_id: str, expected: str, new: str
    ) -> bool:
        """See ConversationStore.replace_qa_summary."""
        async with self._s.write("replace_qa_summary") as conn:
            await self._require(conn, project, session_id, lock=True)
            status = await conn.execute(
                f"UPDATE conversation_sessions SET qa_summary = $3 WHERE {_SCOPE}"
                " AND qa_summary = $4",
                project,
                session_id,
                new,
                expected,
            )
        return rowcount(status) == 1

    async def cache_put(self, project: str, session_id: str, item: CachedResult) -> None:
        """See ConversationStore.cache_put."""
        async with self._s.write("cache_put") as conn:
            await self._require(conn, project, session_id, lock=True)
            # INSERT OR REPLACE in SQLite: the whole row is replaced, created_at included.
            await conn.execute(
                "INSERT INTO tool_result_cache (project, session_id, cache_key, tool_name,"
                " parameters, result, duration, remaining, created_at)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                " ON CONFLICT (project, session_id, cache_key) DO UPDATE SET"
                " tool_name = EXCLUDED.tool_name, parameters = EXCLUDED.parameters,"
                " result = EXCLUDED.result, duration = EXCLUDED.duration,"
                " remaining = EXCLUDED.remaining, created_at = EXCLUDED.created_at",
                *_WRITE.cached(project, session_id, item),
            )

    async def cache_get(self, project: str, session_id: str, key: str) -> CachedResult | None:
        """See ConversationStore.cache_get."""
        async with self._s.write("cache_get") as conn:
            await self._require(conn, project, session_id, lock=True)
            row = await conn.fetchrow(
                "UPDATE tool_result_cache SET remaining = duration"
                f" WHERE {_SCOPE} AND cache_key = $3 RETURNING *",
                project,
                session_id,
                key,
            )
        return _ROWS.cached(row) if row is not None else None

    async def cache_list(self, project: str, session_id: str) -> list[CachedResult]:
        """See ConversationStore.cache_list."""
        async with self._s.snapshot("cache_list") as conn:
            await self._require(conn, project, session_id, lock=False)
            rows = await conn.fetch(
                f"SELECT * FROM tool_result_cache WHERE {_SCOPE} {_CACHE_ORDER}",
                project,
                session_id,
            )
        return [_ROWS.cached(r) for r in rows]

    async def export_session(self, project: str, session_id: str) -> SessionExport:
        """See ConversationStore.export_session."""
        scope = (project, session_id)
        async with self._s.snapshot("export_session") as conn:
            session = await self._require(conn, project, session_id, lock=False)
            entries = await conn.fetch(
                f"SELECT * FROM conversation_entries WHERE {_SCOPE} ORDER BY entry_no", *scope
            )
            summaries = await conn.fetch(
                f"SELECT * FROM conversation_summaries WHERE {_SCOPE} ORDER BY summary_no", *scope
            )
            exchanges = await conn.fetch(
                f"SELECT * FROM conversation_exchanges WHERE {_SCOPE} ORDER BY exchange_no",
                *scope,
            )
            cache = await conn.fetch(
                f"SELECT * FROM tool_result_cache WHERE {_SCOPE} {_CACHE_ORDER}", *scope
            )
        return _ROWS.export(session, entries, summaries, exchanges, cache)

    async def import_session(self, project: str, data: SessionExport) -> None:
        """See ConversationStore.import_session."""
        async with self._s.write("import_session") as conn:
            status = await conn.execute(_IMPORT_SESSION, *_WRITE.session(project, data))
            if rowcount(status) != 1:
                raise session_exists(data.session_id)
            for sql, rows in zip(_IMPORT_ROWS, _WRITE.session_rows(project, data), strict=True):
                await conn.executemany(sql, rows)

    async def delete_session(self, project: str, session_id: str) -> int:
        """See ConversationStore.delete_session."""
        async with self._s.write("delete_session") as conn:
            await self._require(conn, project, session_id, lock=True)
            count = await conn.fetchval(
                f"SELECT count(*) FROM conversation_entries WHERE {_SCOPE}", project, session_id
            )
            await conn.execute(
                f"DELETE FROM conversation_sessions WHERE {_SCOPE}", project, session_id
            )
        return int(count or 0)

    def change_marks(self) -> PostgresChangeMarks:
        """Marks of sessions and projects on this store's pool (server.live watches them)."""
        from memory_core.storage.postgres.change_marks import PostgresChangeMarks

        return PostgresChangeMarks(self._s)
