"""The backend-neutral part of MemoryTransfer: where each record kind lives, how pages are cut.

Both backends hold every record kind in a table of the same name and columns (one schema, two
dialects), so the table of a kind, the columns an import writes and the keyset paging of an
export are decided here once. A backend supplies only its dialect: how a placeholder is written
and how a key column sorts (PostgreSQL compares text keys byte-wise with COLLATE "C", as
SQLite's BINARY collation does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_core.ports.transfer import TableSpec, table

__all__ = [
    "TABLE",
    "count_query",
    "import_columns",
    "memory_identity",
    "page_query",
    "relink_statement",
    "version_stored",
]

Mark = Callable[[int], str]  # the n-th (1-based) placeholder of a statement

# The table behind each record kind (memory_core.ports.transfer.TABLES).
TABLE = {
    "memory": "context_snapshots",
    "memory_version": "memory_versions",
    "conversation_session": "conversation_sessions",
    "conversation_summary": "conversation_summaries",
    "conversation_entry": "conversation_entries",
    "conversation_exchange": "conversation_exchanges",
    "tool_result": "tool_result_cache",
    "scratchpad_snippet": "scratchpad_snippets",
    "preference": "user_preferences",
    "playbook": "playbooks",
    "document": "knowledge_documents",
    "document_chunk": "knowledge_chunks",
    "document_revision": "knowledge_revisions",
}


def import_columns(spec: TableSpec, *, keep_ids: bool) -> list[str]:
    """The columns an import writes: all of them, or all but `id` when ids are renumbered."""
    return [name for name in spec.names if keep_ids or name != "id"]


def count_query(kind: str, project: str | None, mark: Mark) -> tuple[str, list[Any]]:
    """The statement and parameters counting a kind's rows in one project, or in the store."""
    spec = table(kind)
    if project is not None and spec.scoped:
        return f"SELECT count(*) FROM {TABLE[kind]} WHERE project = {mark(1)}", [project]
    return f"SELECT count(*) FROM {TABLE[kind]}", []


def page_query(
    kind: str,
    project: str | None,
    after: tuple[Any, ...] | None,
    limit: int,
    *,
    mark: Mark,
    key: Callable[[str], str] = str,
) -> tuple[str, list[Any]]:
    """The statement and parameters of one keyset page of a kind, in key order.

    Args:
        kind: The record kind.
        project: Only this project's rows (kinds without a project ignore it).
        after: The key of the last row of the previous page, or None for the first page.
        limit: Rows in the page.
        mark: The backend's placeholder.
        key: How a key column is compared and sorted (its name by default).
    """
    spec = table(kind)
    keys = ", ".join(key(name) for name in spec.key)
    where: list[str] = []
    params: list[Any] = []
    if after is not None:
        params += list(after)
        where.append(f"({keys}) > ({', '.join(mark(n + 1) for n in range(len(after)))})")
    if project is not None and spec.scoped:
        params.append(project)
        where.append(f"project = {mark(len(params))}")
    sql = f"SELECT {', '.join(spec.names)} FROM {TABLE[kind]}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    params.append(limit)
    return f"{sql} ORDER BY {keys} LIMIT {mark(len(params))}", params


def memory_identity(row: dict[str, Any], mark: Mark) -> tuple[str, list[Any]]:
    """The statement and parameters finding the stored memory with a memory row's identity.

    The store's own uniqueness rules (migrations 0001 and 0013): a key is unique in its
    project and layer; unkeyed text by its hash, or its normalised hash, in its project and
    layer, and in the working layer in its session too.
    """
    if row["key"] is not None:
        return (
            f"SELECT id FROM context_snapshots WHERE project = {mark(1)} AND layer = {mark(2)}"
            f" AND key = {mark(3)}",
            [row["project"], row["layer"], row["key"]],
        )
    session = (row["session_id"] or "") if row["layer"] == "working" else ""
    return (
        f"SELECT id FROM context_snapshots WHERE project = {mark(1)} AND layer = {mark(2)}"
        " AND key IS NULL"
        f" AND (CASE WHEN layer = 'working' THEN coalesce(session_id, '') ELSE '' END) = {mark(3)}"
        f" AND (content_hash = {mark(4)} OR norm_hash = {mark(5)}) ORDER BY id LIMIT 1",
        [row["project"], row["layer"], session, row["content_hash"], row["norm_hash"]],
    )


def version_stored(mark: Mark) -> str:
    """Whether a memory already holds a version (memory_id, valid_from, content_hash, change).

    Versions have no unique key of their own: this is their identity on import, so a file
    imported twice, or after an import that died, adds no version twice.
    """
    return (
        f"SELECT 1 FROM memory_versions WHERE memory_id = {mark(1)} AND valid_from = {mark(2)}"
        f" AND content_hash = {mark(3)} AND change = {mark(4)}"
    )


def relink_statement(mark: Mark) -> str:
    """The statement setting one memory's superseded_by: (superseded by, id)."""
    return f"UPDATE context_snapshots SET superseded_by = {mark(1)} WHERE id = {mark(2)}"
