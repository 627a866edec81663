"""PostgresMemoryRepository: the MemoryRepository port on PostgreSQL (same semantics as SQLite).

Stats read the counters that migration 0006's statement-level triggers keep (one grouped
upsert per statement, counter rows locked in sorted order, so concurrent writers neither lose
a count nor deadlock within a statement), corrected for the rows that aged across a tier
boundary since their tier was stored; see the SQLite twin's module docstring.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_core.domain.models import (
    AddOutcome,
    BrowseQuery,
    Layer,
    Memory,
    MemoryDraft,
    PruneOutcome,
    StoreStats,
    TextMatch,
    TextQuery,
    Tier,
    TierCutoffs,
)
from memory_core.domain.versions import ForgetReceipt, MemoryChange, MemoryVersion, UpdateOutcome
from memory_core.storage.counts_fold import fold_counts
from memory_core.storage.postgres import expired_pages
from memory_core.storage.postgres.pressure import PostgresPressure
from memory_core.storage.postgres.rows import COLUMNS, aware, row_to_memory, row_to_version
from memory_core.storage.postgres.session import PostgresSession, maintenance_lock, rowcount
from memory_core.storage.postgres.tsquery import any_word_tsquery, to_tsquery_text
from memory_core.storage.records import identity_hash, store_stats

__all__ = ["PostgresMemoryRepository"]

_REFERENCE = "coalesce(last_accessed, created_at)"
# Recording that rows were handed out; a use recorded late (at capture) never moves the last
# access back (GREATEST skips a NULL). It locks rows in the plan's order and then counter rows,
# so it runs through PostgresSession.write_retried: a deadlock's victim runs again.
_ACCESS_SQL = (
    "UPDATE context_snapshots SET last_accessed = GREATEST(last_accessed, $1),"
    " access_count = access_count + 1, memory_tier = 'ACTIVE'"
    " WHERE project = $2 AND id = ANY($3::bigint[])"
)


def _live_tier(first: int) -> str:
    """The live tier of a row, with the three cutoffs as parameters $first..$first+2.

    The strict '>' matches domain.tiers.classify_tier (an age of exactly one threshold is the
    older tier), as in the SQLite backend.
    """
    a, r, z = first, first + 1, first + 2
    return (
        f"CASE WHEN {_REFERENCE} > ${a} THEN 'ACTIVE' WHEN {_REFERENCE} > ${r} THEN 'RECENT'"
        f" WHEN {_REFERENCE} > ${z} THEN 'ARCHIVED' ELSE 'EXPIRED' END"
    )


def _cutoffs(cutoffs: TierCutoffs) -> list[datetime]:
    return [
        aware(cutoffs.active_after),
        aware(cutoffs.recent_after),
        aware(cutoffs.archived_after),
    ]


def _filters(query: TextQuery, args: list[Any]) -> str:
    """SQL conditions (on alias `s`) for a query's optional filters; appends to `args`."""
    where: list[str] = []
    if query.layer is not None:
        args.append(query.layer.value)
        where.append(f"s.layer = ${len(args)}")
    if query.session_id is not None:
        args.append(query.session_id)
        where.append(f"s.session_id = ${len(args)}")
    where += _who_when_tags(query, args, "s.")
    if not query.include_superseded:
        where.append("s.superseded_by IS NULL")
    return "".join(f" AND {w}" for w in where)


def _who_when_tags(query: TextQuery | BrowseQuery, args: list[Any], alias: str) -> list[str]:
    """Conditions on author, creation time and tags (the GIN index on tags answers `@>`)."""
    where = []
    for condition, value in (
        ("author =", query.author),
        ("created_at >=", aware(query.since) if query.since else None),
        ("created_at <", aware(query.until) if query.until else None),
        ("tags @>", list(query.tags) or None),
    ):
        if value is not None:
            args.append(value)
            cast = "::jsonb" if condition == "tags @>" else ""
            where.append(f"{alias}{condition} ${len(args)}{cast}")
    return where


def _browse_filters(query: BrowseQuery, args: list[Any]) -> str:
    """The conditions of a listing but its tier and page (see BrowseQuery)."""
    where = []
    for column, value in (("layer", query.layer), ("session_id", query.session_id)):
        if value is not None:
            args.append(value)
            where.append(f"{column} = ${len(args)}")
    if query.superseded is not None:
        where.append("superseded_by IS " + ("NOT NULL" if query.superseded else "NULL"))
    if query.pinned is not None:
        where.append("pinned" if query.pinned else "NOT pinned")
    if query.ids:
        args.append(list(query.ids))
        where.append(f"id = ANY(${len(args)}::bigint[])")
    where += _who_when_tags(query, args, "")
    return "".join(f" AND {w}" for w in where)


def _scope(draft: MemoryDraft) -> str:
    """The session part of an unkeyed identity (working rows are unique per session)."""
    return (draft.session_id or "") if draft.layer is Layer.WORKING else ""


def _identity(draft: MemoryDraft) -> tuple[str, str, str, str]:
    """An unkeyed draft's identity, as ux_snapshots_norm sees it (its normalised text)."""
    return (draft.project, draft.layer.value, _scope(draft), _norm(draft))


def _norm(draft: MemoryDraft) -> str:
    norm = identity_hash(draft.key, draft.content)
    assert norm is not None  # unkeyed
    return norm


def _stored_identity(memory: Memory) -> tuple[str, str, str, str]:
    scope = (memory.session_id or "") if memory.layer is Layer.WORKING else ""
    norm = identity_hash(memory.key, memory.content)
    assert norm is not None
    return (memory.project, memory.layer.value, scope, norm)


def _lock_name(draft: MemoryDraft) -> str:
    """The advisory lock text of a draft's identity (key, else content hash)."""
    if draft.key is not None:
        return f"k\x1f{draft.project}\x1f{draft.layer.value}\x1f{draft.key}"
    return f"c\x1f{draft.project}\x1f{draft.layer.value}\x1f{_scope(draft)}\x1f{_norm(draft)}"


async def _lock_identities(conn: Any, drafts: Sequence[MemoryDraft]) -> None:
    """Take every draft's identity lock up front, in one global order.

    Trigger: two batches (replicas, or add_many/replace_with calls) share identities.
    Why: taking the locks in batch order could deadlock them (A holds x and waits for y,
    B holds y and waits for x). Outcome: all locks in ascending hash order, before any row is
    touched; the per-draft lock in `_add_in_transaction` then finds it already held. A volatile
    function in the select list is evaluated after the ORDER BY, so the order holds.
    """
    await conn.execute(
        "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(n, 0) AS h"
        " FROM unnest($1::text[]) AS n) AS locks ORDER BY h",
        [_lock_name(d) for d in drafts],
    )


# Rows whose stored tier is not their tier as of now, counted by (stored, live): for each stored
# tier, the reference times outside its window ($1..$3 the cutoffs, $4 the project), one range
# of idx_snapshots_project_tier_reference each.
_OUTSIDE = (
    ("ACTIVE", "<= $1"),
    ("RECENT", "> $1"),
    ("RECENT", "<= $2"),
    ("ARCHIVED", "> $2"),
    ("ARCHIVED", "<= $3"),
    ("EXPIRED", "> $3"),
)
_MOVED = " UNION ALL ".join(
    f"SELECT '{tier}' AS stored, {_live_tier(1)} AS live, count(*) AS n FROM context_snapshots"
    f" WHERE project = $4 AND memory_tier = '{tier}' AND {_REFERENCE} {bound} GROUP BY 2"
    for tier, bound in _OUTSIDE
)
_S_COLUMNS = ", ".join(f"s.{c.strip()}" for c in COLUMNS.split(","))
# Weights {D, C, B, A}: the key (A) and the content (D) count alike, metadata values (C) half,
# as the FTS5 table's bm25(1.0, 1.0, 0.5) (migrations/*/0007); normalisation 1 divides by
# 1 + log(document length), so shorter matches rank first.
_RANK = "ts_rank_cd('{1,0.5,1,1}', s.search_vector, q, 1)"


# A row's current version, kept in memory_versions before an update or a keyed upsert changes
# it ($1 the row, $2 the instant it stops being current, $3 why).
_KEEP_VERSION = (
    "INSERT INTO memory_versions (memory_id, project, key, content, metadata, tags,"
    " content_hash, valid_from, valid_until, change)"
    " SELECT id, project, key, content, metadata, tags, content_hash, updated_at, $2, $3"
    " FROM context_snapshots WHERE id = $1"
)


async def _restate(conn: Any, existing: Memory, draft: MemoryDraft, stamp: datetime) -> Memory:
    """A memory written again: refreshed (not counted as a read), new metadata and tags merged.

    Restating a memory is evidence it still matters: its reference time moves so it is not
    aged out (as in the SQLite backend).
    """
    refreshed = await PostgresSession.one(
        conn,
        "UPDATE context_snapshots SET last_accessed = $1, memory_tier = 'ACTIVE',"
        f" metadata = $2, tags = $3 WHERE id = $4 RETURNING {COLUMNS}",
        stamp,
        {**existing.metadata, **draft.metadata},
        list(dict.fromkeys([*existing.tags, *draft.tags])),
        existing.id,
    )
    assert refreshed is not None
    return refreshed


async def _locked(conn: Any, project: str, memory_id: int) -> Memory | None:
    """A row of the project by id, locked until the transaction ends."""
    return await PostgresSession.one(
        conn,
        f"SELECT {COLUMNS} FROM context_snapshots WHERE project = $1 AND id = $2 FOR UPDATE",
        project,
        memory_id,
    )


async def _superseding(conn: Any, draft: MemoryDraft, outcome: AddOutcome) -> AddOutcome:
    """Mark the rows `draft.supersedes` (of its project, other than itself) as replaced."""
    older = [i for i in draft.supersedes if i != outcome.memory.id]
    if older:
        await conn.execute(
            "UPDATE context_snapshots SET superseded_by = $1"
            " WHERE project = $2 AND id = ANY($3::bigint[])",
            outcome.memory.id,
            draft.project,
            PostgresSession.ids(older),
        )
    return outcome


class PostgresMemoryRepository(PostgresPressure):
    """Rows of context_snapshots in PostgreSQL, a tsvector + GIN index for keyword search."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    # -- writes ---------------------------------------------------------------------------

    async def add(self, draft: MemoryDraft, now: datetime) -> AddOutcome:
        """Insert or upsert a draft; see MemoryRepository.add."""
        async with self._session.write("add") as conn:
            await maintenance_lock(conn, shared=True)
            return await self._add_in_transaction(conn, draft, now)

    async def add_many(self, drafts: Sequence[MemoryDraft], now: datetime) -> list[AddOutcome]:
        """Add drafts in one transaction, each as `add` would; see MemoryRepository.add_many.

        Trigger: most of a batch is new unkeyed text (imports, bulk appends). Why: `add` costs
        three round trips per row. Outcome: after taking every identity lock (in one order),
        the unkeyed drafts whose identity is neither stored nor repeated earlier in the batch
        are inserted by one INSERT ... SELECT FROM unnest; keyed drafts and the rest then go
        through `add`'s logic in batch order, so the outcomes equal adding them one by one.
        """
        if not drafts:
            return []
        async with self._session.write("add many") as conn:
            await maintenance_lock(conn, shared=True)
            await _lock_identities(conn, drafts)
            outcomes = await self._insert_fresh(conn, drafts, aware(now))
            for i, draft in enumerate(drafts):
                if i not in outcomes:
                    outcomes[i] = await self._add_in_transaction(conn, draft, now)
        return [outcomes[i] for i in range(len(drafts))]

    async def _insert_fresh(
        self, conn: Any, drafts: Sequence[MemoryDraft], stamp: datetime
    ) -> dict[int, AddOutcome]:
        """Insert the first draft of each unkeyed identity not stored yet; outcomes by index."""
        first: dict[tuple[str, str, str, str], int] = {}
        for i, draft in enumerate(drafts):
            if draft.key is None:
                first.setdefault(_identity(draft), i)
        if not first:
            return {}
        probe = list(first)
        # Stored by normalised text, or by exact text (rows from before migration 0013).
        rows = await conn.fetch(
            "SELECT u.i FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])"
            " WITH ORDINALITY AS u(project, layer, scope, norm, hash, i) WHERE EXISTS ("
            " SELECT 1 FROM context_snapshots AS s WHERE s.project = u.project"
            " AND s.layer = u.layer AND s.key IS NULL AND s.norm_hash = u.norm"
            " AND (CASE WHEN s.layer = 'working' THEN coalesce(s.session_id, '') ELSE '' END)"
            " = u.scope) OR EXISTS ("
            " SELECT 1 FROM context_snapshots AS s WHERE s.project = u.project"
            " AND s.layer = u.layer AND s.key IS NULL AND s.content_hash = u.hash"
            " AND (CASE WHEN s.layer = 'working' THEN coalesce(s.session_id, '') ELSE '' END)"
            " = u.scope)",
            *([ident[n] for ident in probe] for n in range(4)),
            [drafts[i].content_hash for i in first.values()],
        )
        stored = {probe[int(r[0]) - 1] for r in rows}
        fresh = [
            i for ident, i in first.items() if ident not in stored and not drafts[i].supersedes
        ]
        if not fresh:
            return {}
        batch = [drafts[i] for i in fresh]
        created = await PostgresSession.memories(
            conn,
            "INSERT INTO context_snapshots (project, layer, key, content, metadata, session_id,"
            " created_at, updated_at, last_accessed, access_count, memory_tier, content_hash,"
            " token_count, author, occurred_at, dates, norm_hash, tags)"
            " SELECT u.project, u.layer, NULL, u.content, u.metadata::jsonb, u.session_id,"
            " u.created_at, $9, NULL, 0, 'ACTIVE', u.hash, u.tokens, u.author, u.occurred_at,"
            " u.dates, u.norm, u.tags::jsonb"
            " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
            " $6::timestamptz[], $7::text[], $8::int[], $10::text[], $11::timestamptz[],"
            " $12::text[], $13::text[], $14::text[])"
            " WITH ORDINALITY AS u(project, layer, content, metadata, session_id, created_at,"
            " hash, tokens, author, occurred_at, dates, norm, tags, i)"
            f" ORDER BY u.i RETURNING {COLUMNS}",
            [d.project for d in batch],
            [d.layer.value for d in batch],
            [d.content for d in batch],
            [json.dumps(d.metadata, ensure_ascii=False) for d in batch],
            [d.session_id for d in batch],
            [aware(d.created_at) if d.created_at else stamp for d in batch],
            [d.content_hash for d in batch],
            [d.token_count for d in batch],
            stamp,
            [d.author for d in batch],
            [aware(d.occurred_at) if d.occurred_at else None for d in batch],
            [d.dates for d in batch],
            [_norm(d) for d in batch],
            [json.dumps(list(d.tags), ensure_ascii=False) for d in batch],
        )
        # Each fresh identity is unique in the batch, so a returned row maps back by it
        # (RETURNING promises no order).
        by_identity = {_stored_identity(m): m for m in created}
        return {
            i: AddOutcome(memory=by_identity[_identity(drafts[i])], status="created") for i in fresh
        }

    async def _add_in_transaction(self, conn: Any, draft: MemoryDraft, now: datetime) -> AddOutcome:
        # The caller holds the shared maintenance lock (see maintenance_lock), and the row found
        # is locked (FOR UPDATE), so a concurrent prune or forget cannot delete it between
        # this lookup and the UPDATE below.
        # Trigger: two writers (replicas, or two calls of one) add the same identity at once.
        # Why: READ COMMITTED lets both see "absent" and one would fail on the unique index.
        # Outcome: a transaction lock on the identity serialises them; the second finds the
        # first's row and reports a duplicate/upsert, as SQLite's BEGIN IMMEDIATE does.
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", _lock_name(draft)
        )
        stamp = aware(now)
        if draft.key is not None:
            existing = await PostgresSession.one(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots"
                " WHERE project = $1 AND layer = $2 AND key = $3 FOR UPDATE",
                draft.project,
                draft.layer.value,
                draft.key,
            )
        else:
            # Mirrors ux_snapshots_norm (then ux_snapshots_content, for rows from before
            # migration 0013): working-layer rows are unique per session.
            existing = None
            for column, digest in (
                ("norm_hash", _norm(draft)),
                ("content_hash", draft.content_hash),
            ):
                existing = existing or await PostgresSession.one(
                    conn,
                    f"SELECT {COLUMNS} FROM context_snapshots WHERE project = $1 AND layer = $2"
                    f" AND {column} = $3 AND key IS NULL AND (layer <> 'working'"
                    " OR coalesce(session_id, '') = coalesce($4, '')) FOR UPDATE",
                    draft.project,
                    draft.layer.value,
                    digest,
                    draft.session_id,
                )
        if existing is None:
            created = await PostgresSession.one(
                conn,
                "INSERT INTO context_snapshots (project, layer, key, content, metadata,"
                " session_id, created_at, updated_at, last_accessed, access_count, memory_tier,"
                " content_hash, token_count, author, occurred_at, dates, norm_hash, tags)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, 0, 'ACTIVE', $9, $10, $11, $12,"
                " $13, $14, $15)"
                f" RETURNING {COLUMNS}",
                draft.project,
                draft.layer.value,
                draft.key,
                draft.content,
                draft.metadata,
                draft.session_id,
                aware(draft.created_at) if draft.created_at else stamp,
                stamp,
                draft.content_hash,
                draft.token_count,
                draft.author,
                aware(draft.occurred_at) if draft.occurred_at else None,
                draft.dates,
                identity_hash(draft.key, draft.content),
                list(draft.tags),
            )
            assert created is not None
            return await _superseding(conn, draft, AddOutcome(memory=created, status="created"))
        unchanged = draft.key is None or (
            existing.content_hash == draft.content_hash and existing.metadata == draft.metadata
        )
        if unchanged:
            refreshed = await _restate(conn, existing, draft, stamp)
            status = "unchanged" if draft.key is not None else "duplicate"
            return await _superseding(conn, draft, AddOutcome(memory=refreshed, status=status))
        await conn.execute(_KEEP_VERSION, existing.id, stamp, "learn")
        updated = await PostgresSession.one(
            conn,
            "UPDATE context_snapshots SET content = $1, metadata = $2, content_hash = $3,"
            " token_count = $4, session_id = coalesce($5, session_id), updated_at = $6,"
            " last_accessed = $6, memory_tier = 'ACTIVE', author = coalesce($8, author),"
            " occurred_at = coalesce($9, occurred_at), dates = $10"
            f" WHERE id = $7 RETURNING {COLUMNS}",
            draft.content,
            draft.metadata,
            draft.content_hash,
            draft.token_count,
            draft.session_id,
            stamp,
            existing.id,
            draft.author,
            aware(draft.occurred_at) if draft.occurred_at else None,
            draft.dates,
        )
        assert updated is not None
        outcome = AddOutcome(memory=updated, status="updated", previous_content=existing.content)
        return await _superseding(conn, draft, outcome)

    async def hand_out(self, project: str, ids: Sequence[int], at: datetime) -> list[Memory]:
        """Record an access on each row and return them as updated; see the port."""
        if not ids:
            return []

        async def work(conn: Any) -> list[Memory]:
            await maintenance_lock(conn, shared=True)
            return await PostgresSession.memories(
                conn,
                f"{_ACCESS_SQL} RETURNING {COLUMNS}",
                aware(at),
                project,
                PostgresSession.ids(ids),
            )

        rows = await self._session.write_retried("recording access", work)
        by_id = {m.id: m for m in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def record_access(self, project: str, ids: Sequence[int], at: datetime) -> None:
        """Record an access on each row (`hand_out` without reading them back); see the port."""
        if not ids:
            return

        async def work(conn: Any) -> None:
            await maintenance_lock(conn, shared=True)
            await conn.execute(_ACCESS_SQL, aware(at), project, PostgresSession.ids(ids))

        await self._session.write_retried("recording access", work)

    async def delete(self, project: str, ids: Sequence[int]) -> int:
        """Delete rows of a project by id."""
        if not ids:
            return 0
        async with self._session.write("delete") as conn:
            await maintenance_lock(conn, shared=True)
            status = await conn.execute(
                "DELETE FROM context_snapshots WHERE project = $1 AND id = ANY($2::bigint[])",
                project,
                PostgresSession.ids(ids),
            )
        return rowcount(status)

    async def delete_layer(self, project: str, layer: Layer | None) -> int:
        """Delete a layer of a project, or all of it."""
        async with self._session.write("clear") as conn:
            await maintenance_lock(conn, shared=True)
            if layer is None:
                status = await conn.execute(
                    "DELETE FROM context_snapshots WHERE project = $1", project
                )
            else:
                status = await conn.execute(
                    "DELETE FROM context_snapshots WHERE project = $1 AND layer = $2",
                    project,
                    layer.value,
                )
        return rowcount(status)

    async def trim_session(
        self, project: str, layer: Layer, session_id: str | None, *, keep: int
    ) -> int:
        """Delete all but the newest `keep` rows of a project+layer+session."""
        async with self._session.write("trim") as conn:
            await maintenance_lock(conn, shared=True)
            status = await conn.execute(
                "DELETE FROM context_snapshots WHERE id IN ("
                " SELECT id FROM context_snapshots"
                " WHERE project = $1 AND layer = $2 AND session_id IS NOT DISTINCT FROM $3"
                " ORDER BY created_at DESC, id DESC OFFSET $4)",
                project,
                layer.value,
                session_id,
                keep,
            )
        return rowcount(status)

    async def replace_with(
        self, project: str, ids: Sequence[int], drafts: Sequence[MemoryDraft], now: datetime
    ) -> list[Memory]:
        """Delete `ids` and add `drafts` atomically."""
        async with self._session.write("compact") as conn:
            await maintenance_lock(conn, shared=True)
            await _lock_identities(conn, drafts)
            if ids:
                await conn.execute(
                    "DELETE FROM context_snapshots WHERE project = $1 AND id = ANY($2::bigint[])",
                    project,
                    PostgresSession.ids(ids),
                )
            return [(await self._add_in_transaction(conn, d, now)).memory for d in drafts]

    # -- one truth per fact (migration 0013) --------------------------------------------

    async def restate(
        self, project: str, memory_id: int, draft: MemoryDraft, now: datetime
    ) -> Memory | None:
        """A near duplicate of `memory_id` was written: refresh it; see the SQLite twin."""
        async with self._session.write("restate") as conn:
            await maintenance_lock(conn, shared=True)
            existing = await _locked(conn, project, memory_id)
            if existing is None:
                return None
            refreshed = await _restate(conn, existing, draft, aware(now))
            outcome = AddOutcome(memory=refreshed, status="duplicate")
            return (await _superseding(conn, draft, outcome)).memory

    async def update(
        self, project: str, memory_id: int, change: MemoryChange, now: datetime
    ) -> UpdateOutcome:
        """Replace content, metadata or tags, keeping the old version; see the SQLite twin."""
        stamp = aware(now)
        async with self._session.write("update") as conn:
            await maintenance_lock(conn, shared=True)
            old = await _locked(conn, project, memory_id)
            if old is None:
                return UpdateOutcome()
            sets: dict[str, Any] = {}
            if change.content is not None and change.content != old.content:
                norm = identity_hash(old.key, change.content)
                if old.key is None:
                    twin = await self._twin(conn, old, norm, change.content_hash)
                    if twin is not None:
                        return UpdateOutcome(duplicate_of=twin)
                sets.update(
                    content=change.content,
                    content_hash=change.content_hash,
                    token_count=change.token_count,
                    dates=change.dates,
                    norm_hash=norm,
                )
            if change.metadata is not None and change.metadata != old.metadata:
                sets["metadata"] = change.metadata
            if change.tags is not None and change.tags != old.tags:
                sets["tags"] = list(change.tags)
            if not sets:
                return UpdateOutcome(memory=old, previous=old)
            await conn.execute(_KEEP_VERSION, old.id, stamp, "update")
            names = list(sets)
            assignments = ", ".join(f"{name} = ${n}" for n, name in enumerate(names, start=3))
            updated = await PostgresSession.one(
                conn,
                f"UPDATE context_snapshots SET {assignments}, updated_at = $2"
                f" WHERE id = $1 RETURNING {COLUMNS}",
                old.id,
                stamp,
                *(sets[name] for name in names),
            )
        return UpdateOutcome(memory=updated, previous=old)

    @staticmethod
    async def _twin(conn: Any, old: Memory, norm: str | None, digest: str | None) -> Memory | None:
        """Another unkeyed row of `old`'s identity already holding the new text."""
        for column, value in (("norm_hash", norm), ("content_hash", digest)):
            found = await PostgresSession.one(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE project = $1 AND layer = $2"
                f" AND {column} = $3 AND key IS NULL AND id <> $5 AND (layer <> 'working'"
                " OR coalesce(session_id, '') = coalesce($4, ''))",
                old.project,
                old.layer.value,
                value,
                old.session_id,
                old.id,
            )
            if found is not None:
                return found
        return None

    async def versions(self, project: str, memory_id: int) -> list[MemoryVersion]:
        """A memory's earlier versions, oldest first."""
        async with self._session.read("versions") as conn:
            rows = await conn.fetch(
                "SELECT * FROM memory_versions WHERE memory_id = $1 AND project = $2 ORDER BY id",
                memory_id,
                project,
            )
        return [row_to_version(r) for r in rows]

    async def set_pinned(self, project: str, ids: Sequence[int], pinned: bool) -> list[Memory]:
        """Pin or unpin rows; returns them as they are now (ids not in the project left out)."""
        if not ids:
            return []
        async with self._session.write("pin") as conn:
            rows = await PostgresSession.memories(
                conn,
                "UPDATE context_snapshots SET pinned = $1"
                f" WHERE project = $2 AND id = ANY($3::bigint[]) RETURNING {COLUMNS}",
                pinned,
                project,
                PostgresSession.ids(ids),
            )
        by_id = {m.id: m for m in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def superseded_rows(self, project: str, memory_id: int) -> list[Memory]:
        """The rows `memory_id` superseded, newest first (idx_snapshots_superseded_by)."""
        async with self._session.read("superseded rows") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots"
                " WHERE superseded_by = $1 AND project = $2 ORDER BY id DESC",
                memory_id,
                project,
            )

    async def forget(self, query: BrowseQuery, *, dry_run: bool, sample: int) -> ForgetReceipt:
        """Delete every row `query` selects, or count them when `dry_run`; see the SQLite twin.

        The keyword index is the rows' own generated tsvector column: it leaves with them.
        """
        args: list[Any] = [query.project]
        where = "project = $1" + _browse_filters(query, args)
        places = {
            "vectors": "SELECT count(*) FROM context_embeddings WHERE id = ANY($1::bigint[])",
            "versions": "SELECT count(*) FROM memory_versions WHERE memory_id = ANY($1::bigint[])",
        }
        async with self._session.write("forget") as conn:
            await maintenance_lock(conn, shared=True)
            rows = await PostgresSession.memories(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE {where} ORDER BY id DESC"
                + ("" if dry_run else " FOR UPDATE"),
                *args,
            )
            ids = [m.id for m in rows]
            counts = {name: int(await conn.fetchval(sql, ids)) for name, sql in places.items()}
            tags = sum(len(m.tags) for m in rows)
            remaining: dict[str, int] = {}
            if not dry_run and ids:
                await conn.execute(
                    "DELETE FROM context_snapshots WHERE id = ANY($1::bigint[])", ids
                )
                left = {
                    "rows": "SELECT count(*) FROM context_snapshots WHERE id = ANY($1::bigint[])",
                    **places,
                }
                remaining = {name: int(await conn.fetchval(sql, ids)) for name, sql in left.items()}
                remaining["keyword_entries"] = remaining["rows"]
                remaining["tags"] = remaining["rows"]
            elif not dry_run:
                remaining = {"rows": 0, **dict.fromkeys(places, 0), "keyword_entries": 0, "tags": 0}
        return ForgetReceipt(
            dry_run=dry_run,
            ids=ids,
            sample=rows[:sample],
            rows=len(ids),
            keyword_entries=len(ids),
            tags=tags,
            remaining=remaining,
            **counts,
        )

    # -- reads ----------------------------------------------------------------------------

    async def get(self, project: str, memory_id: int) -> Memory | None:
        """One row by id."""
        async with self._session.read("get") as conn:
            return await PostgresSession.one(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE project = $1 AND id = $2",
                project,
                memory_id,
            )

    async def get_many(self, project: str, ids: Sequence[int], query: TextQuery) -> list[Memory]:
        """Rows by id that pass the query's filters."""
        if not ids:
            return []
        args: list[Any] = [project, PostgresSession.ids(ids)]
        where = _filters(query, args)
        async with self._session.read("get many") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {_S_COLUMNS} FROM context_snapshots AS s WHERE s.project = $1"
                f" AND s.id = ANY($2::bigint[]){where} ORDER BY s.id",
                *args,
            )

    async def get_by_key(self, project: str, layer: Layer, key: str) -> Memory | None:
        """One keyed row."""
        async with self._session.read("get by key") as conn:
            return await PostgresSession.one(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots"
                " WHERE project = $1 AND layer = $2 AND key = $3",
                project,
                layer.value,
                key,
            )

    async def list_layer(
        self, project: str, layer: Layer, session_id: str | None, *, newest_first: bool
    ) -> list[Memory]:
        """All rows of a layer, optionally of one session, in creation order."""
        order = "DESC" if newest_first else "ASC"
        args: list[Any] = [project, layer.value]
        where = "project = $1 AND layer = $2"
        if session_id is not None:
            args.append(session_id)
            where += " AND session_id = $3"
        async with self._session.read("list layer") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE {where}"
                f" ORDER BY created_at {order}, id {order}",
                *args,
            )

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        """Keyword candidates by ts_rank_cd, reported as a BM25-like value (lower is better).

        With prefixes, the rank is that of the exact words alone plus a quarter of the whole
        query's (exact or prefix): ts_rank_cd counts a lexeme once even when both `'vuln'` and
        `'vuln':*` match it, and normalisation 1 divides by 1 + log(length), so with equal
        shares a one-word prefix-only row would outrank any exact row of three words or more.
        With a quarter, an exact match ranks first up to about e^4 = 54 words (FTS5 gets the
        same order from BM25's IDF, the prefix matching more rows than the word).
        """
        if not query.words:
            return []
        tsquery = any_word_tsquery(query.words, query.prefix_min_chars)
        exact = any_word_tsquery(query.words)
        args: list[Any] = [tsquery, query.project, query.limit, exact]
        where = _filters(query, args)
        sql = (
            f"SELECT {_S_COLUMNS}, {_RANK.replace(', q,', ', e,')} + 0.25 * {_RANK} AS rank"
            " FROM context_snapshots AS s, to_tsquery('memstrata', $1) AS q,"
            " to_tsquery('memstrata', $4) AS e"
            f" WHERE s.search_vector @@ q AND s.project = $2{where}"
            " ORDER BY rank DESC, s.id DESC LIMIT $3"
        )
        async with self._session.read("keyword search") as conn:
            rows = await conn.fetch(sql, *args)
        return [TextMatch(memory=row_to_memory(r), bm25=-float(r["rank"])) for r in rows]

    async def search_keys(
        self, project: str, layer: Layer, fts: str, *, limit: int
    ) -> list[Memory]:
        """Keyed rows whose key matches `fts` (weight A of the tsvector)."""
        tsquery = to_tsquery_text(fts, weight="A")
        if not tsquery:
            return []
        async with self._session.read("key search") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {_S_COLUMNS} FROM context_snapshots AS s,"
                " to_tsquery('memstrata', $1) AS q"
                " WHERE s.search_vector @@ q AND s.project = $2 AND s.layer = $3"
                " AND s.key IS NOT NULL AND s.superseded_by IS NULL"
                f" ORDER BY {_RANK} DESC, s.id DESC LIMIT $4",
                tsquery,
                project,
                layer.value,
                limit,
            )

    async def list_recent(
        self,
        project: str,
        layer: Layer | None,
        *,
        limit: int,
        include_superseded: bool = False,
    ) -> list[Memory]:
        """Most recently used or created first; superseded rows only when asked."""
        args: list[Any] = [project, limit]
        where = "project = $1" if include_superseded else "project = $1 AND superseded_by IS NULL"
        if layer is not None:
            args.append(layer.value)
            where += " AND layer = $3"
        async with self._session.read("load context") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE {where}"
                f" ORDER BY {_REFERENCE} DESC, id DESC LIMIT $2",
                *args,
            )

    async def browse(self, query: BrowseQuery, cutoffs: TierCutoffs) -> list[Memory]:
        """Newest id first; the live tier is a range of the reference time."""
        args: list[Any] = [query.project, query.limit]
        where = "project = $1"
        if query.tier is not None:
            bounds = _cutoffs(cutoffs)
            newer = {Tier.ACTIVE: None, Tier.RECENT: 0, Tier.ARCHIVED: 1, Tier.EXPIRED: 2}
            older = {Tier.ACTIVE: 0, Tier.RECENT: 1, Tier.ARCHIVED: 2, Tier.EXPIRED: None}
            above, at_most = older[query.tier], newer[query.tier]
            if above is not None:
                args.append(bounds[above])
                where += f" AND {_REFERENCE} > ${len(args)}"
            if at_most is not None:
                args.append(bounds[at_most])
                where += f" AND {_REFERENCE} <= ${len(args)}"
        if query.before_id is not None:
            args.append(query.before_id)
            where += f" AND id < ${len(args)}"
        where += _browse_filters(query, args)
        async with self._session.read("browse") as conn:
            return await PostgresSession.memories(
                conn,
                f"SELECT {COLUMNS} FROM context_snapshots WHERE {where} ORDER BY id DESC LIMIT $2",
                *args,
            )

    async def use_ages(self, project: str, now: datetime, *, max_days: int) -> dict[int, int]:
        """One GROUP BY over the project's reference times."""
        async with self._session.read("use ages") as conn:
            rows = await conn.fetch(
                "SELECT least(floor(extract(epoch FROM ($2 - "
                f"{_REFERENCE})) / 86400)::bigint, $3) AS age, count(*) AS n"
                " FROM context_snapshots WHERE project = $1 GROUP BY age",
                project,
                aware(now),
                max_days,
            )
        return {max(int(r["age"]), 0): int(r["n"]) for r in rows}

    # -- maintenance ----------------------------------------------------------------------

    async def recalculate_tiers(self, cutoffs: TierCutoffs, project: str | None) -> int:
        """One set-based UPDATE over the project (or all rows)."""
        async with self._session.write("tier recalculation") as conn:
            await maintenance_lock(conn)
            return await self._recalculate(conn, cutoffs, project)

    async def _recalculate(self, conn: Any, cutoffs: TierCutoffs, project: str | None) -> int:
        args: list[Any] = _cutoffs(cutoffs)
        scope = ""
        if project is not None:
            args.append(project)
            scope = " AND project = $4"
        live = _live_tier(1)
        status = await conn.execute(
            f"UPDATE context_snapshots SET memory_tier = {live}"
            f" WHERE memory_tier IS DISTINCT FROM {live}{scope}",
            *args,
        )
        return rowcount(status)

    async def prune_expired(
        self, cutoffs: TierCutoffs, project: str | None, *, limit: int | None, dry_run: bool
    ) -> PruneOutcome:
        """Delete (or list, when dry_run) EXPIRED rows, least accessed first, then oldest."""
        args: list[Any] = [aware(cutoffs.archived_after), limit]  # LIMIT NULL: no limit
        scope = ""
        if project is not None:
            args.append(project)
            scope = " AND project = $3"
        # The live condition guards the delete even if the stored tier were stale.
        candidates = (
            "SELECT id FROM context_snapshots"
            f" WHERE {_REFERENCE} <= $1 AND NOT pinned{scope}"
            f" ORDER BY access_count, {_REFERENCE}, id LIMIT $2"
        )
        if dry_run:
            async with self._session.read("prune (dry run)") as conn:
                rows = await conn.fetch(candidates, *args)
            return PruneOutcome(ids=[int(r[0]) for r in rows], dry_run=True)
        async with self._session.write("prune") as conn:
            await maintenance_lock(conn)
            await self._recalculate(conn, cutoffs, project)
            # A row handed out after the recalculation above is re-checked by the DELETE
            # (READ COMMITTED re-evaluates memory_tier on the newest row version): it stays.
            rows = await conn.fetch(
                "DELETE FROM context_snapshots WHERE memory_tier = 'EXPIRED' AND NOT pinned"
                f" AND id IN ({candidates}) RETURNING id",
                *args,
            )
        return PruneOutcome(ids=sorted(int(r[0]) for r in rows), dry_run=False)

    async def delete_expired(self, ids: Sequence[int], cutoffs: TierCutoffs) -> list[int]:
        """Delete those of `ids` that are EXPIRED by their reference time; see the port."""
        if not ids:
            return []
        async with self._session.write("prune") as conn:
            await maintenance_lock(conn)
            # READ COMMITTED re-checks the condition on the newest version of a row that is
            # being handed out meanwhile: a row used since it was listed stays.
            rows = await conn.fetch(
                "DELETE FROM context_snapshots WHERE id = ANY($1::bigint[])"
                f" AND {_REFERENCE} <= $2 AND NOT pinned RETURNING id",
                PostgresSession.ids(ids),
                aware(cutoffs.archived_after),
            )
        return sorted(int(r[0]) for r in rows)

    async def stats(self, project: str, cutoffs: TierCutoffs) -> StoreStats:
        """Live tier and layer counts, sizes and dates, in time independent of the store size.

        As in the SQLite backend: the kept counters (memory_counts, migration 0006) by stored
        tier, corrected by the rows whose reference time crossed a tier boundary since their
        tier was stored (`_MOVED`, one index range per stored tier and side).
        """
        async with self._session.snapshot("stats") as conn:
            kept = await conn.fetch(
                "SELECT layer, memory_tier, n, bytes, never_accessed FROM memory_counts"
                " WHERE project = $1",
                project,
            )
            moved = await conn.fetch(_MOVED, *_cutoffs(cutoffs), project)
            dates = await conn.fetchrow(
                "SELECT (SELECT min(created_at) FROM context_snapshots WHERE project = $1),"
                " (SELECT max(created_at) FROM context_snapshots WHERE project = $1)",
                project,
            )
            size = await conn.fetchval(
                "SELECT pg_total_relation_size('context_snapshots')"
                " + coalesce(pg_total_relation_size(to_regclass('context_embeddings')), 0)"
            )
            marks = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM context_snapshots WHERE project = $1 AND pinned),"
                " (SELECT count(*) FROM context_snapshots WHERE superseded_by IS NOT NULL"
                " AND project = $1)",
                project,
            )
        oldest, newest = dates[0], dates[1]
        return store_stats(
            project,
            fold_counts(kept, moved),
            int(size),
            aware(oldest) if oldest else None,
            aware(newest) if newest else None,
            pinned=int(marks[0]),
            superseded=int(marks[1]),
        )

    async def has_project(self, project: str) -> bool:
        """Whether a project holds a row (an index lookup on the project prefix)."""
        async with self._session.read("check project") as conn:
            found = await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM context_snapshots WHERE project = $1)", project
            )
        return bool(found)

    async def projects(self) -> list[str]:
        """Projects holding rows, in byte order (as SQLite sorts them)."""
        async with self._session.read("list projects") as conn:
            rows = await conn.fetch(
                'SELECT DISTINCT project COLLATE "C" AS project FROM context_snapshots ORDER BY 1'
            )
        return [str(r[0]) for r in rows]

    async def expired_page(
        self,
        project: str,
        cutoffs: TierCutoffs,
        *,
        after: tuple[datetime, int] | None,
        limit: int,
    ) -> list[Memory]:
        """A page of what an unlimited prune would delete; see the port."""
        return await expired_pages.expired_page(
            self._session, project, cutoffs.archived_after, after=after, limit=limit
        )

    async def count_expired(self, project: str, cutoffs: TierCutoffs, *, cap: int) -> int:
        """How many rows an unlimited prune would delete, up to `cap + 1`; see the port."""
        return await expired_pages.count_expired(
            self._session, project, cutoffs.archived_after, cap=cap
        )
