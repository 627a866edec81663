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

__all__ = ["TABLE", "count_query", "import_columns", "page_query"]

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
