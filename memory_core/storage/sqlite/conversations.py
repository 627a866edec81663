"""SqliteConversationStore: the ConversationStore port on the shared SQLite connection."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import aiosqlite
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
from memory_core.storage.records import RowReader, RowWriter, json_text
from memory_core.storage.sqlite.rows import decode_time, encode_time
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory_core.storage.sqlite.change_marks import SqliteChangeMarks

__all__ = ["SqliteConversationStore"]

_ROWS = RowReader(decode_time)
_WRITE = RowWriter(encode_time, flag=int)

_SCOPE = "project = :project AND session_id = :session_id"
_IMPORT_SESSION = (
    "INSERT INTO conversation_sessions (project, session_id, created_at, updated_at, config,"
    " qa_summary, qa_summary_from, qa_summary_until, next_entry, next_summary, next_exchange)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
# In the order of RowWriter.session_rows.
_IMPORT_ROWS = (
    "INSERT INTO conversation_summaries (project, session_id, summary_no, text, entry_ids,"
    " token_count, original_tokens, ratio, covers_from, covers_until, source, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO conversation_entries (project, session_id, entry_no, type, role, content,"
    " tool_name, arguments, source, is_error, created_at, token_count, compressed, summary_no)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO conversation_exchanges (project, session_id, exchange_no, question, answer,"
    " answer_shortened, created_at, folded) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO tool_result_cache (project, session_id, cache_key, tool_name, parameters,"
    " result, duration, remaining, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
)
# A new entry's row (RowWriter.entry), as an import writes it.
_ENTRY_ROW = _IMPORT_ROWS[1]


def _opt_time(value: datetime | None) -> str | None:
    return encode_time(value) if value is not None else None


class SqliteConversationStore:
    """Conversation memory in the tables of migration 0003."""

    def __init__(self, session: SqliteSession) -> None:
        self._s = session

    async def _require(self, db: aiosqlite.Connection, project: str, session_id: str) -> Any:
        async with db.execute(
            f"SELECT * FROM conversation_sessions WHERE {_SCOPE}",
            {"project": project, "session_id": session_id},
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id, project)
        return row

    async def create_session(
        self, project: str, session_id: str, now: datetime
    ) -> tuple[SessionInfo, bool]:
        """See ConversationStore.create_session."""
        async with self._s.write("create_session") as db:
            cur = await db.execute(
                "INSERT INTO conversation_sessions (project, session_id, created_at, updated_at) "
                "VALUES (:project, :session_id, :now, :now) ON CONFLICT DO NOTHING",
                {"project": project, "session_id": session_id, "now": encode_time(now)},
            )
            created = cur.rowcount == 1
            row = await self._require(db, project, session_id)
        return _ROWS.session(row), created

    async def get_session(self, project: str, session_id: str) -> SessionInfo:
        """See ConversationStore.get_session."""
        async with self._s.read("get_session") as db:
            return _ROWS.session(await self._require(db, project, session_id))

    async def list_sessions(self, project: str, limit: int) -> list[SessionInfo]:
        """See ConversationStore.list_sessions."""
        async with self._s.read("list_sessions"):
            rows = await self._s.fetch(
                "SELECT * FROM conversation_sessions WHERE project = ? "
                "ORDER BY updated_at DESC, session_id LIMIT ?",
                (project, limit),
            )
        return [_ROWS.session(r) for r in rows]

    async def add_entry(
        self, project: str, session_id: str, draft: EntryDraft, now: datetime
    ) -> Entry:
        """See ConversationStore.add_entry."""
        scope = {"project": project, "session_id": session_id}
        async with self._s.write("add_entry") as db:
            row = await self._require(db, project, session_id)
            number = row["next_entry"]
            stamp = encode_time(now)
            await db.execute(
                "INSERT INTO conversation_entries (project, session_id, entry_no, type, role, "
                "content, tool_name, arguments, source, is_error, created_at, token_count) "
                "VALUES (:project, :session_id, :no, :type, :role, :content, :tool_name, "
                ":arguments, :source, :is_error, :now, :tokens)",
                {
                    **scope,
                    "no": number,
                    "type": draft.type.value,
                    "role": draft.role.value,
                    "content": draft.content,
                    "tool_name": draft.tool_name,
                    "arguments": json_text(draft.arguments)
                    if draft.arguments is not None
                    else None,
                    "source": draft.source,
                    "is_error": int(draft.is_error),
                    "now": stamp,
                    "tokens": draft.token_count,
                },
            )
            await db.execute(
                "UPDATE conversation_sessions SET next_entry = next_entry + 1, updated_at = :now "
                f"WHERE {_SCOPE}",
                {**scope, "now": stamp},
            )
        return Entry(
            id=number,
            timestamp=now,
            **draft.model_dump(),
        )

    async def add_entries(
        self, project: str, session_id: str, drafts: Sequence[EntryDraft], now: datetime
    ) -> list[Entry]:
        """See ConversationStore.add_entries."""
        if not drafts:
            return []
        async with self._s.write("add_entries") as db:
            first = int((await self._require(db, project, session_id))["next_entry"])
            entries = [
                Entry(id=first + n, timestamp=now, **d.model_dump()) for n, d in enumerate(drafts)
            ]
            await db.executemany(
                _ENTRY_ROW, [_WRITE.entry(project, session_id, e) for e in entries]
            )
            await db.execute(
                "UPDATE conversation_sessions SET next_entry = next_entry + :count, "
                f"updated_at = :now WHERE {_SCOPE}",
                {
                    "project": project,
                    "session_id": session_id,
                    "count": len(drafts),
                    "now": encode_time(now),
                },
            )
        return entries

    async def entries(self, project: str, session_id: str, *, active_only: bool) -> list[Entry]:
        """See ConversationStore.entries."""
        only = " AND compressed = 0" if active_only else ""
        async with self._s.snapshot("entries") as db:
            await self._require(db, project, session_id)
            rows = await self._s.fetch(
                f"SELECT * FROM conversation_entries WHERE {_SCOPE}{only} ORDER BY entry_no",
                {"project": project, "session_id": session_id},
            )
        return [_ROWS.entry(r) for r in rows]

    async def summaries(self, project: str, session_id: str) -> list[Summary]:
        """See ConversationStore.summaries."""
        async with self._s.snapshot("summaries") as db:
            await self._require(db, project, session_id)
            rows = await self._s.fetch(
                f"SELECT * FROM conversation_summaries WHERE {_SCOPE} ORDER BY summary_no",
                {"project": project, "session_id": session_id},
            )
        return [_ROWS.summary(r) for r in rows]

    async def exchanges(
        self, project: str, session_id: str, *, active_only: bool
    ) -> list[Exchange]:
        """See ConversationStore.exchanges."""
        only = " AND folded = 0" if active_only else ""
        async with self._s.snapshot("exchanges") as db:
            await self._require(db, project, session_id)
            rows = await self._s.fetch(
                f"SELECT * FROM conversation_exchanges WHERE {_SCOPE}{only} ORDER BY exchange_no",
                {"project": project, "session_id": session_id},
            )
        return [_ROWS.exchange(r) for r in rows]

    async def apply_summary(
        self, project: str, session_id: str, draft: SummaryDraft, now: datetime
    ) -> Summary | None:
        """See ConversationStore.apply_summary."""
        scope = {"project": project, "session_id": session_id}
        ids = list(draft.entry_ids)
        async with self._s.write("apply_summary") as db:
            row = await self._require(db, project, session_id)
            # json_each keeps the id list one bound parameter, however long it is.
            async with db.execute(
                f"SELECT count(*) FROM conversation_entries WHERE {_SCOPE} AND compressed = 0 "
                "AND entry_no IN (SELECT value FROM json_each(:ids))",
                {**scope, "ids": json.dumps(ids)},
            ) as cur:
                found = await cur.fetchone()
            if found is None or found[0] != len(set(ids)):
                return None
            stored = draft.stored(row["next_summary"], now)
            await db.execute(
                "INSERT INTO conversation_summaries (project, session_id, summary_no, text, "
                "entry_ids, token_count, original_tokens, ratio, covers_from, covers_until, "
                "source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _WRITE.summary(project, session_id, stored),
            )
            await db.execute(
                "UPDATE conversation_entries SET compressed = 1, summary_no = :no "
                f"WHERE {_SCOPE} AND entry_no IN (SELECT value FROM json_each(:ids))",
                {**scope, "no": stored.id, "ids": json.dumps(ids)},
            )
            clear_pending = settles_pending(row["pending_summary"], ids)
            await db.execute(
                "UPDATE conversation_sessions SET next_summary = next_summary + 1, "
                "updated_at = :now"
                + (", pending_summary = NULL" if clear_pending else "")
                + f" WHERE {_SCOPE}",
                {**scope, "now": encode_time(now)},
            )
        return stored

    async def set_pending(
        self, project: str, session_id: str, pending: PendingSummary | None
    ) -> None:
        """See ConversationStore.set_pending."""
        async with self._s.write("set_pending") as db:
            await self._require(db, project, session_id)
            await db.execute(
                f"UPDATE conversation_sessions SET pending_summary = :p WHERE {_SCOPE}",
                {
                    "project": project,
                    "session_id": session_id,
                    "p": pending.model_dump_json() if pending else None,
                },
            )

    async def set_config(
        self, project: str, session_id: str, config: dict[str, JsonValue], now: datetime
    ) -> None:
        """See ConversationStore.set_config."""
        async with self._s.write("set_config") as db:
            await self._require(db, project, session_id)
            await db.execute(
                f"UPDATE conversation_sessions SET config = :c, updated_at = :now WHERE {_SCOPE}",
                {
                    "project": project,
                    "session_id": session_id,
                    "c": canonical_json(config),
                    "now": encode_time(now),
                },
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
        scope = {"project": project, "session_id": session_id}
        async with self._s.write("finalize_exchange") as db:
            row = await self._require(db, project, session_id)
            stored = new_exchange(row["next_exchange"], exchange, now)
            await db.execute(
                "INSERT INTO conversation_exchanges (project, session_id, exchange_no, question, "
                "answer, answer_shortened, created_at, folded) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                _WRITE.exchange(project, session_id, stored),
            )
            active = [
                _ROWS.exchange(r)
                for r in await self._s.fetch(
                    f"SELECT * FROM conversation_exchanges WHERE {_SCOPE} AND folded = 0 "
                    "ORDER BY exchange_no",
                    scope,
                )
            ]
            span = (row["qa_summary_from"], row["qa_summary_until"])
            qa = fold_overflow(
                active, max_active, (row["qa_summary"], *map(_ROWS.time_or_none, span)), fold
            )
            if qa.overflow:
                await db.execute(
                    f"UPDATE conversation_exchanges SET folded = 1 WHERE {_SCOPE} "
                    "AND exchange_no <= :last",
                    {**scope, "last": qa.overflow[-1].id},
                )
            await db.execute(
                "UPDATE conversation_sessions SET next_exchange = next_exchange + 1, "
                "qa_summary = :summary, qa_summary_from = :from, qa_summary_until = :until, "
                f"updated_at = :now WHERE {_SCOPE}",
                {
                    **scope,
                    "summary": qa.summary,
                    "from": _opt_time(qa.covers_from),
                    "until": _opt_time(qa.covers_until),
                    "now": encode_time(now),
                },
            )
            await db.execute(
                f"UPDATE tool_result_cache SET remaining = remaining - 1 WHERE {_SCOPE}", scope
            )
            expired = await self._s.fetch(
                f"DELETE FROM tool_result_cache WHERE {_SCOPE} AND remaining <= 0 RETURNING *",
                scope,
            )
        return exchange_outcome(stored, qa, (_ROWS.cached(r) for r in expired))

    async def replace_qa_summary(
        self, project: str, session_id: str, expected: str, new: str
    ) -> bool:
        """See ConversationStore.replace_qa_summary."""
        async with self._s.write("replace_qa_summary") as db:
            await self._require(db, project, session_id)
            cur = await db.execute(
                f"UPDATE conversation_sessions SET qa_summary = :new WHERE {_SCOPE} "
                "AND qa_summary = :expected",
                {"project": project, "session_id": session_id, "new": new, "expected": expected},
            )
            return cur.rowcount == 1

    async def cache_put(self, project: str, session_id: str, item: CachedResult) -> None:
        """See ConversationStore.cache_put."""
        async with self._s.write("cache_put") as db:
            await self._require(db, project, session_id)
            await db.execute(
                "INSERT OR REPLACE INTO tool_result_cache (project, session_id, cache_key, "
                "tool_name, parameters, result, duration, remaining, created_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _WRITE.cached(project, session_id, item),
            )

    async def cache_get(self, project: str, session_id: str, key: str) -> CachedResult | None:
        """See ConversationStore.cache_get."""
        async with self._s.write("cache_get") as db:
            await self._require(db, project, session_id)
            rows = await self._s.fetch(
                "UPDATE tool_result_cache SET remaining = duration "
                f"WHERE {_SCOPE} AND cache_key = :key RETURNING *",
                {"project": project, "session_id": session_id, "key": key},
            )
        return _ROWS.cached(rows[0]) if rows else None

    async def cache_list(self, project: str, session_id: str) -> list[CachedResult]:
        """See ConversationStore.cache_list."""
        async with self._s.snapshot("cache_list") as db:
            await self._require(db, project, session_id)
            rows = await self._s.fetch(
                f"SELECT * FROM tool_result_cache WHERE {_SCOPE} ORDER BY created_at, cache_key",
                {"project": project, "session_id": session_id},
            )
        return [_ROWS.cached(r) for r in rows]

    async def export_session(self, project: str, session_id: str) -> SessionExport:
        """See ConversationStore.export_session."""
        scope = {"project": project, "session_id": session_id}
        async with self._s.snapshot("export_session") as db:
            session = await self._require(db, project, session_id)
            entries = await self._s.fetch(
                f"SELECT * FROM conversation_entries WHERE {_SCOPE} ORDER BY entry_no", scope
            )
            summaries = await self._s.fetch(
                f"SELECT * FROM conversation_summaries WHERE {_SCOPE} ORDER BY summary_no", scope
            )
            exchanges = await self._s.fetch(
                f"SELECT * FROM conversation_exchanges WHERE {_SCOPE} ORDER BY exchange_no", scope
            )
            cache = await self._s.fetch(
                f"SELECT * FROM tool_result_cache WHERE {_SCOPE} ORDER BY created_at, cache_key",
                scope,
            )
        return _ROWS.export(session, entries, summaries, exchanges, cache)

    async def import_session(self, project: str, data: SessionExport) -> None:
        """See ConversationStore.import_session."""
        async with self._s.write("import_session") as db:
            cur = await db.execute(_IMPORT_SESSION, _WRITE.session(project, data))
            if cur.rowcount != 1:
                raise session_exists(data.session_id)
            for sql, rows in zip(_IMPORT_ROWS, _WRITE.session_rows(project, data), strict=True):
                await db.executemany(sql, rows)

    async def delete_session(self, project: str, session_id: str) -> int:
        """See ConversationStore.delete_session."""
        scope = {"project": project, "session_id": session_id}
        async with self._s.write("delete_session") as db:
            await self._require(db, project, session_id)
            async with db.execute(
                f"SELECT count(*) FROM conversation_entries WHERE {_SCOPE}", scope
            ) as cur:
                count = await cur.fetchone()
            await db.execute(f"DELETE FROM conversation_sessions WHERE {_SCOPE}", scope)
        return int(count[0]) if count else 0

    def change_marks(self) -> SqliteChangeMarks:
        """Marks of sessions and projects on this store's connection (server.live watches them)."""
        from memory_core.storage.sqlite.change_marks import SqliteChangeMarks

        return SqliteChangeMarks(self._s)
