"""SqliteMemoryRepository: the MemoryRepository port on one SQLite file.

Stats in constant time (migration 0006): triggers keep `memory_counts`, rows and content bytes
per (project, layer, stored tier), inside every writing statement's transaction, so appends,
imports, copy-store, recalculation, pruning and deletes all keep it exact, and SQLite's single
writer keeps it exact across processes. `by_tier` in stats means the tier *as of now*, which
moves with the clock while the stored tier waits for the next recalculation; stats therefore
takes the counts by stored tier and moves the rows whose reference time has crossed a boundary
since (one range of idx_snapshots_project_tier_reference per stored tier and side, see
`kept_counts.MOVED`: the stats statements live there, shared with the lean `memstrata stats`).
Those rows are also `stale_tiers`; after the daily recalculation they are a day's ageing, not
the store (0.5 ms at 100k rows against 138 ms for the former full count).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiosqlite

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
from memory_core.storage.records import identity_hash, store_stats
from memory_core.storage.sqlite import expired_pages
from memory_core.storage.sqlite.fts_match import (
    any_word,
    every_word,
    exact_word,
    prefix_candidates,
    two_words,
)
from memory_core.storage.sqlite.kept_counts import (
    DATES,
    KEPT,
    MARKS,
    MOVED,
    SIZE,
    cutoff_params,
)
from memory_core.storage.sqlite.kept_counts import LIVE_TIER as _LIVE_TIER
from memory_core.storage.sqlite.kept_counts import REFERENCE as _REFERENCE
from memory_core.storage.sqlite.keyword_tables import indexed_write, keyword_table
from memory_core.storage.sqlite.pressure import SqlitePressure, delete_listed
from memory_core.storage.sqlite.rows import (
    decode_time,
    encode_time,
    row_to_memory,
    row_to_version,
)
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    from memory_core.storage.sqlite.keyword_postings import KeywordPostings, Ranking

__all__ = ["SqliteMemoryRepository"]

_INSERT = """
INSERT INTO context_snapshots (project, layer, key, content, metadata, session_id, created_at,
                               updated_at, last_accessed, access_count, memory_tier,
                               content_hash, token_count, author, occurred_at, dates, norm_hash,
                               tags)
VALUES (:project, :layer, :key, :content, :metadata, :session_id, :created, :now, NULL, 0,
        'ACTIVE', :content_hash, :token_count, :author, :occurred_at, :dates, :norm_hash, :tags)
RETURNING *"""

# A row's current version, kept in memory_versions before an update or a keyed upsert changes
# it (`:id` the row, `:until` the instant it stops being current, `:change` why).
_KEEP_VERSION = """
INSERT INTO memory_versions (memory_id, project, key, content, metadata, tags, content_hash,
                             valid_from, valid_until, change)
SELECT id, project, key, content, metadata, tags, content_hash, updated_at, :until, :change
FROM context_snapshots WHERE id = :id"""


# The live tier as a condition on the reference time (the strict '>' as in _LIVE_TIER). The
# wide bands are written with `+` so that browse does not use the index for them (see browse).
_TIER_RANGE = {
    Tier.ACTIVE: f"{_REFERENCE} > :active_after",
    Tier.RECENT: f"{_REFERENCE} > :recent_after AND {_REFERENCE} <= :active_after",
    Tier.ARCHIVED: f"+{_REFERENCE} > :archived_after AND +{_REFERENCE} <= :recent_after",
    Tier.EXPIRED: f"+{_REFERENCE} <= :archived_after",
}


def _cutoff_params(cutoffs: TierCutoffs) -> dict[str, str]:
    return cutoff_params(cutoffs.active_after, cutoffs.recent_after, cutoffs.archived_after)


def _filters(query: TextQuery) -> tuple[str, dict[str, Any]]:
    """SQL conditions (on alias `s`) and parameters for a query's optional filters."""
    where, params = _row_filters(query)
    if not query.include_superseded:
        where.append("s.superseded_by IS NULL")
    return "".join(f" AND {w}" for w in where), params


def _row_filters(query: TextQuery) -> tuple[list[str], dict[str, Any]]:
    """`_filters`' conditions but "not superseded": the ones the client asked for."""
    where: list[str] = []
    params: dict[str, Any] = {}
    if query.layer is not None:
        where.append("s.layer = :layer")
        params["layer"] = query.layer.value
    if query.session_id is not None:
        where.append("s.session_id = :session_id")
        params["session_id"] = query.session_id
    where += _who_when_tags(query, params, "s.")
    return where, params


# Recording that rows were handed out. A use recorded late (at capture) never moves the last
# access back; the times are ISO text of one width, so max() orders them (and skips a NULL).
_ACCESS_SQL = (
    "UPDATE context_snapshots SET last_accessed = max(coalesce(last_accessed, ?), ?),"
    " access_count = access_count + 1, memory_tier = 'ACTIVE'"
    " WHERE +project = ? AND id IN ({ids})"
)


def _narrowed(query: TextQuery) -> bool:
    """Whether a filter beyond "not superseded" applies, so that keyword matches are overfetched.

    Superseded rows are few among a query's best matches, and when they are not the retry
    rounds read further; overfetching for them alone read and decoded 200 rows to keep 50 at
    limit 10 (2.1 of the 3.1 ms of a keyword search at 100k).
    """
    return bool(_row_filters(query)[0])


def _who_when_tags(query: TextQuery | BrowseQuery, params: dict[str, Any], alias: str) -> list[str]:
    """Conditions on author, creation time and tags (each tag one probe of memory_tags)."""
    where = []
    if query.author is not None:
        where.append(f"{alias}author = :author")
        params["author"] = query.author
    if query.since is not None:
        where.append(f"{alias}created_at >= :since")
        params["since"] = encode_time(query.since)
    if query.until is not None:
        where.append(f"{alias}created_at < :until")
        params["until"] = encode_time(query.until)
    params["tag_project"] = query.project
    for n, tag in enumerate(query.tags):
        params[f"tag{n}"] = tag
        where.append(
            f"{alias}id IN (SELECT memory_id FROM memory_tags"
            f" WHERE project = :tag_project AND tag = :tag{n})"
        )
    return where


# Keyword matches ranked per requested candidate before the row filters (layer, session,
# author, dates) are applied; without them the cap is the limit.
_OVERFETCH = 4
# An OR query matching more rows than this ranks the rows holding every word first.
_SCORE_ALL_MAX = 10_000
# Up to this many words, the rows holding two of them come next (`two_words`). Its pairs grow
# with the square of the words: at 1M rows it beat the OR query at 8 common words (93 against
# 146 ms) and 10 (164 against 192), and lost at 12 (235 against 218).
_TWO_WORDS_MAX = 8
# The service asks this many keyword candidates per hit it returns (services.memories).
_CANDIDATES_PER_HIT = 4
# A word keeps its prefix form unless this many rows (of the project; or the candidate limit,
# if larger) hold it whole. Dropping the prefix changes BM25 slightly (a row holding the word
# no longer matches it twice): LoCoMo dev R@10 -0.004 with the candidate limit as the bar,
# -0.0013 with this one (docs/benchmarks.md); below it the prefix costs about a millisecond.
_PREFIX_COMMON_MIN = 1000


def _browse_filters(query: BrowseQuery, params: dict[str, Any]) -> str:
    """The conditions of a listing but its tier and page (see BrowseQuery)."""
    where = []
    if query.layer is not None:
        where.append("layer = :layer")
        params["layer"] = query.layer.value
    if query.session_id is not None:
        where.append("session_id = :session_id")
        params["session_id"] = query.session_id
    if query.superseded is not None:
        where.append("superseded_by IS " + ("NOT NULL" if query.superseded else "NULL"))
    if query.pinned is not None:
        where.append(f"pinned = {int(query.pinned)}")
    if query.ids:
        where.append(f"id IN ({', '.join(str(int(i)) for i in query.ids)})")
    where += _who_when_tags(query, params, "")
    return "".join(f" AND {w}" for w in where)


def _capped_text_sql(where: str, fts: str) -> str:
    """The best `:cap` matches (-1: all) of the project's keyword table `fts`, joined, filtered.

    `rowid DESC` breaks BM25 ties inside the cap as the outer ORDER BY does (newest first),
    so the cap never changes which of two equal rows is returned; SQLite's bounded sorter
    also beats FTS5's own `ORDER BY rank` here (6.0 vs 8.6 ms at 80k rows).
    """
    return (
        f"WITH hits AS (SELECT rowid AS id, rank AS bm25 FROM {fts}"
        f" WHERE {fts} MATCH :fts ORDER BY rank, rowid DESC LIMIT :cap)"
        " SELECT s.*, hits.bm25 AS bm25 FROM hits JOIN context_snapshots AS s ON s.id = hits.id"
        f" WHERE s.project = :project{where} ORDER BY hits.bm25, s.id DESC LIMIT :limit"
    )


def _most_selective(words: Sequence[str], counts: dict[str, int], most: int) -> list[str]:
    """The `most` words matching the fewest rows (the earlier of a tie), in query order.

    Trigger: a many-word query whose OR matches a large share of a large project, and whose
    rows holding every word are too few (`search_text`). Why: pairing every word was not
    worth it past _TWO_WORDS_MAX words, so such queries scored the whole OR, the costliest
    statement of a search at 100k rows (a 14-word query: 15-22 ms). Outcome: the rows holding
    two of the query's most selective words are taken instead, as for a shorter query.
    """
    if len(words) <= most:
        return list(words)
    chosen = set(sorted(words, key=lambda w: (counts.get(w, 0), words.index(w)))[:most])
    return [word for word in words if word in chosen]


def _text_matches(rows: list[Any]) -> list[TextMatch]:
    return [TextMatch(memory=row_to_memory(r), bm25=float(r["bm25"])) for r in rows]


def _placeholders(ids: Sequence[int]) -> str:
    # Statements that pick rows by id write the project check as `+project`: the unary plus
    # keeps the planner (no ANALYZE statistics) from walking the project's whole index
    # instead of probing the ids (hand_out at 80k rows: 6.2 ms -> 0.06 ms).
    return ", ".join("?" for _ in ids)


# An unkeyed row's identity, as ux_snapshots_content indexes it (the CASE must match the
# index's expression word for word, or SQLite cannot use the index past (project, layer)).
_IDENTITY = (
    "project = :project AND layer = :layer AND key IS NULL"
    " AND CASE WHEN layer = 'working' THEN coalesce(session_id, '') ELSE '' END = :scope"
)
# Hashes looked up per statement when a batch checks which of its drafts are already stored.
_HASH_CHUNK = 500


def _scope(draft: MemoryDraft) -> str:
    """The session part of an unkeyed draft's identity (working rows are unique per session)."""
    return (draft.session_id or "") if draft.layer is Layer.WORKING else ""


def _identity(draft: MemoryDraft) -> tuple[str, str, str, str]:
    """An unkeyed draft's identity: its normalised text in its project, layer and scope."""
    return (draft.project, draft.layer.value, _scope(draft), _norm(draft))


def _norm(draft: MemoryDraft) -> str:
    norm = identity_hash(draft.key, draft.content)
    assert norm is not None  # unkeyed
    return norm


def _insert_params(draft: MemoryDraft, stamp: str) -> dict[str, Any]:
    return {
        "project": draft.project,
        "layer": draft.layer.value,
        "key": draft.key,
        "content": draft.content,
        "metadata": json.dumps(draft.metadata, ensure_ascii=False),
        "session_id": draft.session_id,
        "now": stamp,
        "created": encode_time(draft.created_at) if draft.created_at else stamp,
        "content_hash": draft.content_hash,
        "token_count": draft.token_count,
        "author": draft.author,
        "occurred_at": encode_time(draft.occurred_at) if draft.occurred_at else None,
        "dates": draft.dates,
        "norm_hash": identity_hash(draft.key, draft.content),
        "tags": json.dumps(list(draft.tags), ensure_ascii=False),
    }


class SqliteMemoryRepository(SqlitePressure):
    """Rows of context_snapshots in SQLite, FTS5 for keyword search (see SqliteSession)."""

    def __init__(self, session: SqliteSession, postings: KeywordPostings | None = None) -> None:
        self._session = session
        # A server's in-memory BM25 of its large projects (keyword_postings); None: FTS5 only.
        self._postings = postings

    @property
    def keyword_postings(self) -> KeywordPostings | None:
        """The in-memory keyword postings this repository ranks with, if any."""
        return self._postings

    # -- writes ---------------------------------------------------------------------------

    async def add(self, draft: MemoryDraft, now: datetime) -> AddOutcome:
        """Insert or upsert a draft; see MemoryRepository.add."""
        async with indexed_write(self._session, "add") as db:
            return await self._add_in_transaction(db, draft, now)

    async def add_many(self, drafts: Sequence[MemoryDraft], now: datetime) -> list[AddOutcome]:
        """Add drafts in one transaction, each as `add` would; see MemoryRepository.add_many.

        Trigger: most of a batch is new unkeyed text (imports, benchmarks, bulk appends).
        Why: `add` costs two statements per row, each a hop to the driver thread. Outcome: the
        drafts whose identity is neither stored nor repeated earlier in the batch are inserted
        with one executemany; keyed drafts and the rest then go through `add`'s logic in batch
        order, so the outcomes equal those of adding the drafts one by one.
        """
        if not drafts:
            return []
        async with indexed_write(self._session, "add many") as db:
            return await self._add_many_in_transaction(db, drafts, now)

    async def _add_many_in_transaction(
        self, db: aiosqlite.Connection, drafts: Sequence[MemoryDraft], now: datetime
    ) -> list[AddOutcome]:
        stamp = encode_time(now)
        first: dict[tuple[str, str, str, str], int] = {}
        for i, draft in enumerate(drafts):
            if draft.key is None:
                first.setdefault(_identity(draft), i)
        stored = await self._stored_identities(list(first))
        stored |= await self._stored_identities(
            [(*_identity(drafts[i])[:3], drafts[i].content_hash) for i in first.values()],
            column="content_hash",
        )
        fresh = [
            i
            for ident, i in first.items()
            if ident not in stored
            and (*ident[:3], drafts[i].content_hash) not in stored
            and not drafts[i].supersedes
        ]
        outcomes: dict[int, AddOutcome] = {}
        if fresh:
            top = await self._session.fetch("SELECT coalesce(max(id), 0) FROM context_snapshots")
            await db.executemany(
                _INSERT.replace("RETURNING *", ""),
                [_insert_params(drafts[i], stamp) for i in fresh],
            )
            # AUTOINCREMENT ids only grow and this transaction holds the write lock, so the
            # rows above the old maximum are exactly these inserts, in insertion order.
            created = await self._session.fetch_memories(
                "SELECT * FROM context_snapshots WHERE id > ? ORDER BY id", (int(top[0][0]),)
            )
            for i, memory in zip(fresh, created, strict=True):
                outcomes[i] = AddOutcome(memory=memory, status="created")
        for i, draft in enumerate(drafts):
            if i not in outcomes:
                outcomes[i] = await self._add_in_transaction(db, draft, now)
        return [outcomes[i] for i in range(len(drafts))]

    async def _stored_identities(
        self, identities: Sequence[tuple[str, str, str, str]], *, column: str = "norm_hash"
    ) -> set[tuple[str, str, str, str]]:
        """Which unkeyed identities are already stored (one index probe per hash).

        By normalised text (`norm_hash`), or by exact text (`content_hash`: rows written
        before migration 0013 have no norm_hash).
        """
        groups: dict[tuple[str, str, str], list[str]] = {}
        for project, layer, scope, digest in identities:
            groups.setdefault((project, layer, scope), []).append(digest)
        found: set[tuple[str, str, str, str]] = set()
        for (project, layer, scope), hashes in groups.items():
            for start in range(0, len(hashes), _HASH_CHUNK):
                chunk = hashes[start : start + _HASH_CHUNK]
                rows = await self._session.fetch(
                    f"SELECT {column} FROM context_snapshots WHERE {_IDENTITY}"
                    f" AND {column} IN (" + ", ".join(f":h{n}" for n in range(len(chunk))) + ")",
                    {
                        "project": project,
                        "layer": layer,
                        "scope": scope,
                        **{f"h{n}": h for n, h in enumerate(chunk)},
                    },
                )
                found.update((project, layer, scope, str(r[0])) for r in rows)
        return found

    async def _add_in_transaction(
        self, db: aiosqlite.Connection, draft: MemoryDraft, now: datetime
    ) -> AddOutcome:
        stamp = encode_time(now)
        if draft.key is not None:
            existing = await self._session.one(
                "SELECT * FROM context_snapshots WHERE project = ? AND layer = ? AND key = ?",
                (draft.project, draft.layer.value, draft.key),
            )
        else:
            # The identity expression spelled as ux_snapshots_content spells it, so the lookup
            # is one probe of that index; `(layer != 'working' OR ...)` only used its
            # (project, layer) prefix and scanned the whole layer (a 100k-row layer: ~30 ms).
            ident = {"project": draft.project, "layer": draft.layer.value, "scope": _scope(draft)}
            existing = await self._session.one(
                f"SELECT * FROM context_snapshots WHERE {_IDENTITY} AND norm_hash = :norm",
                {**ident, "norm": _norm(draft)},
            ) or await self._session.one(
                f"SELECT * FROM context_snapshots WHERE {_IDENTITY} AND content_hash = :hash",
                {**ident, "hash": draft.content_hash},
            )
        if existing is None:
            created = await self._session.one(_INSERT, _insert_params(draft, stamp))
            assert created is not None
            return await self._superseding(db, draft, AddOutcome(memory=created, status="created"))
        unchanged = draft.key is None or (
            existing.content_hash == draft.content_hash and existing.metadata == draft.metadata
        )
        if unchanged:
            refreshed = await self._restate(existing, draft.metadata, draft.tags, stamp)
            status = "unchanged" if draft.key is not None else "duplicate"
            return await self._superseding(db, draft, AddOutcome(memory=refreshed, status=status))
        await db.execute(_KEEP_VERSION, {"id": existing.id, "until": stamp, "change": "learn"})
        updated = await self._session.one(
            "UPDATE context_snapshots SET content = ?, metadata = ?, content_hash = ?,"
            " token_count = ?, session_id = coalesce(?, session_id), updated_at = ?,"
            " last_accessed = ?, memory_tier = 'ACTIVE', author = coalesce(?, author),"
            " occurred_at = coalesce(?, occurred_at), dates = ? WHERE id = ? RETURNING *",
            (
                draft.content,
                json.dumps(draft.metadata, ensure_ascii=False),
                draft.content_hash,
                draft.token_count,
                draft.session_id,
                stamp,
                stamp,
                draft.author,
                encode_time(draft.occurred_at) if draft.occurred_at else None,
                draft.dates,
                existing.id,
            ),
        )
        assert updated is not None
        outcome = AddOutcome(memory=updated, status="updated", previous_content=existing.content)
        return await self._superseding(db, draft, outcome)

    async def _restate(
        self, existing: Memory, metadata: dict[str, Any], tags: Sequence[str], stamp: str
    ) -> Memory:
        """A memory written again: refreshed, its new metadata keys and tags merged in.

        Restating a memory is evidence it still matters: its reference time moves so it is
        not aged out, without counting it as a read.
        """
        merged = {**existing.metadata, **metadata}
        all_tags = list(dict.fromkeys([*existing.tags, *tags]))
        refreshed = await self._session.one(
            "UPDATE context_snapshots SET last_accessed = ?, memory_tier = 'ACTIVE',"
            " metadata = ?, tags = ? WHERE id = ? RETURNING *",
            (
                stamp,
                json.dumps(merged, ensure_ascii=False),
                json.dumps(all_tags, ensure_ascii=False),
                existing.id,
            ),
        )
        assert refreshed is not None
        return refreshed

    async def _superseding(
        self, db: aiosqlite.Connection, draft: MemoryDraft, outcome: AddOutcome
    ) -> AddOutcome:
        """Mark the rows `draft.supersedes` (of its project, other than itself) as replaced."""
        older = [i for i in draft.supersedes if i != outcome.memory.id]
        if older:
            await db.execute(
                "UPDATE context_snapshots SET superseded_by = ?"
                f" WHERE +project = ? AND id IN ({_placeholders(older)})",
                (outcome.memory.id, draft.project, *older),
            )
        return outcome

    async def hand_out(self, project: str, ids: Sequence[int], at: datetime) -> list[Memory]:
        """Record an access on each row and return them as updated; see the port."""
        if not ids:
            return []
        rows = await self._session.write_memories(
            "recording access",
            _ACCESS_SQL.format(ids=_placeholders(ids)) + " RETURNING *",
            (encode_time(at), encode_time(at), project, *ids),
        )
        by_id = {m.id: m for m in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def record_access(self, project: str, ids: Sequence[int], at: datetime) -> None:
        """Record an access on each row; deferred past the request when the session defers."""
        if not ids:
            return
        sql = _ACCESS_SQL.format(ids=_placeholders(ids))
        params = (encode_time(at), encode_time(at), project, *ids)
        if self._session.defers:
            self._session.defer("recording access", sql, params)
        else:
            await self._session.write_memories("recording access", sql, params)

    async def delete(self, project: str, ids: Sequence[int]) -> int:
        """Delete rows of a project by id."""
        if not ids:
            return 0
        async with indexed_write(self._session, "delete") as db:
            cur = await db.execute(
                "DELETE FROM context_snapshots"
                f" WHERE +project = ? AND id IN ({_placeholders(ids)})",
                (project, *ids),
            )
            return cur.rowcount

    async def delete_layer(self, project: str, layer: Layer | None) -> int:
        """Delete a layer of a project, or all of it."""
        async with indexed_write(self._session, "clear") as db:
            if layer is None:
                cur = await db.execute(
                    "DELETE FROM context_snapshots WHERE project = ?", (project,)
                )
            else:
                cur = await db.execute(
                    "DELETE FROM context_snapshots WHERE project = ? AND layer = ?",
                    (project, layer.value),
                )
            return cur.rowcount

    async def trim_session(
        self, project: str, layer: Layer, session_id: str | None, *, keep: int
    ) -> int:
        """Delete all but the newest `keep` rows of a project+layer+session."""
        async with indexed_write(self._session, "trim") as db:
            cur = await db.execute(
                "DELETE FROM context_snapshots WHERE id IN ("
                " SELECT id FROM context_snapshots"
                " WHERE project = ? AND layer = ? AND session_id IS ?"
                " ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)",
                (project, layer.value, session_id, keep),
            )
            return cur.rowcount

    async def replace_with(
        self, project: str, ids: Sequence[int], drafts: Sequence[MemoryDraft], now: datetime
    ) -> list[Memory]:
        """Delete `ids` and add `drafts` atomically."""
        async with indexed_write(self._session, "compact") as db:
            if ids:
                await db.execute(
                    "DELETE FROM context_snapshots"
                    f" WHERE +project = ? AND id IN ({_placeholders(ids)})",
                    (project, *ids),
                )
            return [(await self._add_in_transaction(db, d, now)).memory for d in drafts]

    # -- one truth per fact (migration 0013) --------------------------------------------

    async def restate(
        self, project: str, memory_id: int, draft: MemoryDraft, now: datetime
    ) -> Memory | None:
        """A near duplicate of `memory_id` was written: refresh it as an exact one would be.

        The draft's new metadata keys and tags are merged in, and the rows it supersedes are
        marked; no row is added. None when the row is gone.
        """
        async with indexed_write(self._session, "restate") as db:
            existing = await self._session.one(
                "SELECT * FROM context_snapshots WHERE +project = ? AND id = ?",
                (project, memory_id),
            )
            if existing is None:
                return None
            refreshed = await self._restate(existing, draft.metadata, draft.tags, encode_time(now))
            outcome = AddOutcome(memory=refreshed, status="duplicate")
            return (await self._superseding(db, draft, outcome)).memory

    async def update(
        self, project: str, memory_id: int, change: MemoryChange, now: datetime
    ) -> UpdateOutcome:
        """Replace a memory's content, metadata or tags, keeping the old version as history.

        A new text that another memory of the same identity (project, layer, scope) already
        holds changes nothing: that memory is returned as `duplicate_of`.
        """
        stamp = encode_time(now)
        async with indexed_write(self._session, "update") as db:
            old = await self._session.one(
                "SELECT * FROM context_snapshots WHERE +project = ? AND id = ?",
                (project, memory_id),
            )
            if old is None:
                return UpdateOutcome()
            sets: dict[str, Any] = {}
            if change.content is not None and change.content != old.content:
                if old.key is None:
                    twin = await self._twin(old, change)
                    if twin is not None:
                        return UpdateOutcome(duplicate_of=twin)
                sets.update(
                    content=change.content,
                    content_hash=change.content_hash,
                    token_count=change.token_count,
                    dates=change.dates,
                    norm_hash=identity_hash(old.key, change.content),
                )
            if change.metadata is not None and change.metadata != old.metadata:
                sets["metadata"] = json.dumps(change.metadata, ensure_ascii=False)
            if change.tags is not None and change.tags != old.tags:
                sets["tags"] = json.dumps(list(change.tags), ensure_ascii=False)
            if not sets:
                return UpdateOutcome(memory=old, previous=old)
            await db.execute(_KEEP_VERSION, {"id": old.id, "until": stamp, "change": "update"})
            assignments = ", ".join(f"{name} = :{name}" for name in sets)
            updated = await self._session.one(
                f"UPDATE context_snapshots SET {assignments}, updated_at = :now"
                " WHERE id = :id RETURNING *",
                {**sets, "now": stamp, "id": old.id},
            )
        return UpdateOutcome(memory=updated, previous=old)

    async def _twin(self, old: Memory, change: MemoryChange) -> Memory | None:
        """Another unkeyed row of `old`'s identity holding `change.content` already."""
        assert change.content is not None
        scope = (old.session_id or "") if old.layer is Layer.WORKING else ""
        ident = {"project": old.project, "layer": old.layer.value, "scope": scope, "id": old.id}
        norm = identity_hash(None, change.content)
        return await self._session.one(
            f"SELECT * FROM context_snapshots WHERE {_IDENTITY} AND norm_hash = :norm"
            " AND id <> :id",
            {**ident, "norm": norm},
        ) or await self._session.one(
            f"SELECT * FROM context_snapshots WHERE {_IDENTITY} AND content_hash = :hash"
            " AND id <> :id",
            {**ident, "hash": change.content_hash},
        )

    async def versions(self, project: str, memory_id: int) -> list[MemoryVersion]:
        """A memory's earlier versions, oldest first."""
        async with self._session.read("versions"):
            rows = await self._session.fetch(
                "SELECT * FROM memory_versions WHERE memory_id = ? AND project = ? ORDER BY id",
                (memory_id, project),
            )
        return [row_to_version(r) for r in rows]

    async def set_pinned(self, project: str, ids: Sequence[int], pinned: bool) -> list[Memory]:
        """Pin or unpin rows; returns them as they are now (ids not in the project left out)."""
        if not ids:
            return []
        rows = await self._session.write_memories(
            "pin",
            f"UPDATE context_snapshots SET pinned = ? WHERE +project = ?"
            f" AND id IN ({_placeholders(ids)}) RETURNING *",
            (int(pinned), project, *ids),
        )
        by_id = {m.id: m for m in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def superseded_rows(self, project: str, memory_id: int) -> list[Memory]:
        """The rows `memory_id` superseded, newest first (idx_snapshots_superseded_by)."""
        async with self._session.read("superseded rows"):
            return await self._session.fetch_memories(
                "SELECT * FROM context_snapshots WHERE superseded_by = ? AND +project = ?"
                " ORDER BY id DESC",
                (memory_id, project),
            )

    async def forget(self, query: BrowseQuery, *, dry_run: bool, sample: int) -> ForgetReceipt:
        """Delete every row `query` selects (all pages), or count them when `dry_run`.

        The receipt's counts are read in the same transaction as the delete: what each row
        had in every place (vectors, keyword index, versions, tags), then what is left.
        """
        where, params = self._forget_filter(query)
        places = {
            "vectors": "SELECT count(*) FROM context_embeddings WHERE id IN ({ids})",
            "versions": "SELECT count(*) FROM memory_versions WHERE memory_id IN ({ids})",
            "tags": "SELECT count(*) FROM memory_tags WHERE memory_id IN ({ids})",
        }
        table = await keyword_table(self._session, query.project)
        context = (
            self._session.read("forget (dry run)")
            if dry_run
            else indexed_write(self._session, "forget")
        )
        async with context as db:
            rows = await self._session.fetch_memories(
                f"SELECT * FROM context_snapshots WHERE {where} ORDER BY id DESC", params
            )
            ids = [m.id for m in rows]
            listed = ", ".join(str(i) for i in ids) or "NULL"
            counts = {
                name: int((await self._session.fetch(sql.format(ids=listed)))[0][0])
                for name, sql in places.items()
            }
            keyword = await self._keyword_entries(table, listed)
            if not dry_run and ids:
                await db.execute(f"DELETE FROM context_snapshots WHERE id IN ({listed})")
        remaining: dict[str, int] = {}
        if not dry_run:
            # Read after the commit: the keyword index is brought up to date just before it.
            left = {
                "rows": "SELECT count(*) FROM context_snapshots WHERE id IN ({ids})",
                **places,
            }
            table = await keyword_table(self._session, query.project)
            async with self._session.read("forget receipt"):
                remaining = {
                    name: int((await self._session.fetch(sql.format(ids=listed)))[0][0])
                    for name, sql in left.items()
                }
                remaining["keyword_entries"] = await self._keyword_entries(table, listed)
        return ForgetReceipt(
            dry_run=dry_run,
            ids=ids,
            sample=rows[:sample],
            rows=len(ids),
            keyword_entries=keyword,
            remaining=remaining,
            **counts,
        )

    async def _keyword_entries(self, table: str | None, listed: str) -> int:
        """Rows of `listed` ids in a project's keyword table (FTS5 rowids are memory ids)."""
        if table is None:
            return 0
        rows = await self._session.fetch(f"SELECT count(*) FROM {table} WHERE rowid IN ({listed})")
        return int(rows[0][0])

    @staticmethod
    def _forget_filter(query: BrowseQuery) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"project": query.project}
        return "project = :project" + _browse_filters(query, params), params

    # -- reads ----------------------------------------------------------------------------

    async def get(self, project: str, memory_id: int) -> Memory | None:
        """One row by id."""
        async with self._session.read("get"):
            return await self._session.one(
                "SELECT * FROM context_snapshots WHERE project = ? AND id = ?",
                (project, memory_id),
            )

    async def get_many(self, project: str, ids: Sequence[int], query: TextQuery) -> list[Memory]:
        """Rows by id that pass the query's filters."""
        return [row_to_memory(row) for row in await self._rows_by_id(project, ids, query)]

    async def _rows_by_id(self, project: str, ids: Sequence[int], query: TextQuery) -> list[Any]:
        """`get_many`'s rows, not yet decoded (by id order)."""
        if not ids:
            return []
        where, params = _filters(query)
        async with self._session.read("get many"):
            return await self._session.fetch(
                f"SELECT s.* FROM context_snapshots AS s WHERE +s.project = :project"
                f" AND s.id IN ({', '.join(str(int(i)) for i in ids)}){where} ORDER BY s.id",
                {**params, "project": project},
            )

    async def get_by_key(self, project: str, layer: Layer, key: str) -> Memory | None:
        """One keyed row."""
        async with self._session.read("get by key"):
            return await self._session.one(
                "SELECT * FROM context_snapshots WHERE project = ? AND layer = ? AND key = ?",
                (project, layer.value, key),
            )

    async def list_layer(
        self, project: str, layer: Layer, session_id: str | None, *, newest_first: bool
    ) -> list[Memory]:
        """All rows of a layer, optionally of one session, in creation order."""
        order = "DESC" if newest_first else "ASC"
        where = "project = ? AND layer = ?"
        params: list[Any] = [project, layer.value]
        if session_id is not None:
            where += " AND session_id = ?"
            params.append(session_id)
        async with self._session.read("list layer"):
            return await self._session.fetch_memories(
                f"SELECT * FROM context_snapshots WHERE {where}"
                f" ORDER BY created_at {order}, id {order}",
                params,
            )

    async def search_text(self, query: TextQuery) -> list[TextMatch]:
        """Keyword candidates by BM25, best first.

        FTS5 computes BM25 for every row an OR query matches (~1.5 us a match here), so the
        cost grows with the store: common words match thousands of rows at 100k. Two
        measures keep it bounded (bench/scale.py):
        - only the best `limit * _OVERFETCH` matches (`limit` without a row filter) are
          joined to their rows and filtered (the former statement joined and sorted every
          match: 11.5 ms -> 6 ms at 80k). If the filters leave fewer than `limit` while more
          rows matched, the search repeats without the cap, so the answer is always the
          filtered top `limit`.
        - Trigger: the OR query matches more than _SCORE_ALL_MAX rows (a large store). Why:
          scoring them all costs tens of ms (26-190 ms at 1M rows). Outcome: rows holding
          *every* word are ranked first, and if there are at least `limit //
          _CANDIDATES_PER_HIT` of them (the hits the service will return) they are the
          answer; else, for 3 words or more, the rows holding at least two of them (of its
          `_TWO_WORDS_MAX` most selective words for a longer query: `_most_selective`;
          `two_words`, ranked by BM25 times one less than the words a row holds), if there
          are that many; otherwise the OR query runs as usual. Smaller stores never take this
          path, so their answers are unchanged.
        - Prefixes only where they cost most and add least: a word whose whole form alone
          matches at least `_PREFIX_COMMON_MIN` rows (or `limit`, if more) is matched whole
          (`_word_counts`). Why: each `"word"*` matches and scores every row holding a word
          it begins (prefixes made keyword search ~1.5x slower at 10k), and such a word's own
          matches already fill the candidate list, ranked above prefix-only matches. A rare or
          unknown word ("vuln") keeps its prefix.
        """
        if not query.words:
            return []
        where, params = _filters(query)
        params.update(project=query.project, limit=query.limit)
        at_least = max(query.limit, _PREFIX_COMMON_MIN)
        narrowed = _narrowed(query)
        found = await self._from_postings(query, None, narrowed, at_least)
        if found is not None:
            return found
        table = await keyword_table(self._session, query.project)
        if table is None:
            return []  # the project was never written
        found = await self._from_postings(query, table, narrowed, at_least)
        if found is not None:
            return found
        async with self._session.read("keyword search"):
            counts = await self._word_counts(table, query.words, at_least)
            prefixed = prefix_candidates(query.words, query.prefix_min_chars)
            whole = {word for word in prefixed if counts[word] >= at_least}
            fts = any_word(query.words, query.prefix_min_chars, whole)
            every = every_word(query.words, query.prefix_min_chars, whole)
            # Counting costs ~0.5 us a match (~2 ms at 100k); a one-word query has no
            # "every word" query to take instead, so it skips the count.
            if every is not None and await self._count_matches(table, fts, _SCORE_ALL_MAX) > (
                _SCORE_ALL_MAX
            ):
                pairs = two_words(
                    _most_selective(query.words, counts, _TWO_WORDS_MAX),
                    query.prefix_min_chars,
                    whole,
                )
                for narrow in (every, pairs):
                    if narrow is None:
                        continue
                    rows = await self._capped_text_search(
                        table, where, {**params, "fts": narrow}, query.limit
                    )
                    if len(rows) >= max(1, query.limit // _CANDIDATES_PER_HIT):
                        return _text_matches(rows)
            params["fts"] = fts
            rows = await self._capped_text_search(table, where, params, query.limit)
        return _text_matches(rows)

    async def _from_postings(
        self,
        query: TextQuery,
        table: str | None,
        narrowed: bool,
        at_least: int,
    ) -> list[TextMatch] | None:
        """`search_text` by the in-memory postings, or None to ask FTS5.

        `table` None: only if the postings are held and the table is as they left it (one
        statement); else the project's table, caught up, or its postings' build started.
        """
        if self._postings is None:
            return None
        words, prefix = query.words, query.prefix_min_chars
        if table is None:
            ranking = await self._postings.unchanged_ranking(
                self._session, query.project, words, prefix, at_least
            )
        else:
            ranking = await self._postings.ranking(
                self._session, query.project, table, words, prefix, at_least
            )
        if ranking is None:
            return None
        return await self._ranked_rows(ranking, query, narrowed)

    async def _ranked_rows(
        self, ranking: Ranking, query: TextQuery, narrowed: bool
    ) -> list[TextMatch]:
        """The first `query.limit` rows of an in-memory ranking that pass its filters, in order.

        The best `limit` are read first (`limit * _OVERFETCH` when `narrowed`); if too few
        pass, the next ones, eight times as many each round. Only the rows kept are decoded:
        a decoded row costs as much as reading it.
        """
        found: list[TextMatch] = []
        taken, want = 0, query.limit * _OVERFETCH if narrowed else query.limit
        while len(found) < query.limit and taken < len(ranking):
            batch = ranking.first(want)[taken:]
            rows = await self._rows_by_id(query.project, [i for i, _ in batch], query)
            by_id = {row["id"]: row for row in rows}
            for i, bm25 in batch:
                row = by_id.get(i)
                if row is not None and len(found) < query.limit:
                    found.append(TextMatch(memory=row_to_memory(row), bm25=bm25))
            taken, want = want, want * 8
        return found

    async def _capped_text_search(
        self, table: str, where: str, params: dict[str, Any], limit: int
    ) -> list[Any]:
        # The project's own table holds only its rows, so with no other filter every capped
        # match passes the join (the retry below covers a row another process just moved or
        # deleted): joining 4x the rows only to drop them cost ~0.3 ms at 80k rows.
        # Unlike the postings' reads, "not superseded" alone still overfetches here: too few
        # rows after the join means scoring every match again, and a fact's corrections share
        # its words.
        cap = limit * _OVERFETCH if where else limit
        sql = _capped_text_sql(where, table)
        rows = await self._session.fetch(sql, {**params, "cap": cap})
        if len(rows) < limit and await self._count_matches(table, params["fts"], cap) > cap:
            rows = await self._session.fetch(sql, {**params, "cap": -1})
        return rows

    async def _word_counts(self, table: str, words: Sequence[str], at_least: int) -> dict[str, int]:
        """How many rows of the project hold each of `words` whole, counted up to `at_least`.

        `table` is the project's keyword table. One statement, reading at most `at_least` rowids of
        each word's doclist (no row is looked up: a per-project count joined each rowid to its row
        and cost as much as the prefixes it saved). FTS5 stems the word as it stems the index
        ("vulnerabilities" counts rows of "vulner"). A word matched by `at_least` rows or more is
        common: it keeps no prefix form, and is among the last a long query pairs (see
        `search_text`).
        """
        if not words:
            return {}
        probe = f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?))"
        rows = await self._session.fetch(
            f"SELECT {', '.join([probe] * len(words))}",
            [v for word in words for v in (exact_word(word), at_least)],
        )
        return {word: int(n) for word, n in zip(words, rows[0], strict=True)}

    async def _count_matches(self, table: str, fts: str, at_most: int) -> int:
        """How many rows of the project (keyword table `table`) match `fts`, up to `at_most + 1`."""
        rows = await self._session.fetch(
            f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (fts, at_most + 1),
        )
        return int(rows[0][0])

    async def search_keys(
        self, project: str, layer: Layer, fts: str, *, limit: int
    ) -> list[Memory]:
        """Keyed rows whose key matches `fts`.

        Not capped like `search_text`: the layer filter (procedural rules are a few percent of
        the rows) would leave too few of the best matches, and the uncapped retry doubled the
        work (recall at 1M rows: p50 5.6 ms as it is, 21.8 ms capped).
        """
        table = await keyword_table(self._session, project)
        if table is None:
            return []  # the project was never written
        async with self._session.read("key search"):
            return await self._session.fetch_memories(
                f"SELECT s.* FROM {table} JOIN context_snapshots AS s ON s.id = {table}.rowid"
                f" WHERE {table} MATCH ? AND s.project = ? AND s.layer = ?"
                " AND s.key IS NOT NULL AND s.superseded_by IS NULL"
                f" ORDER BY bm25({table}), s.id DESC LIMIT ?",
                (f"key : ({fts})", project, layer.value, limit),
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
        where = "project = ?"
        if not include_superseded:
            where += " AND superseded_by IS NULL"
        params: list[Any] = [project]
        if layer is not None:
            where += " AND layer = ?"
            params.append(layer.value)
        async with self._session.read("load context"):
            return await self._session.fetch_memories(
                f"SELECT * FROM context_snapshots WHERE {where}"
                f" ORDER BY {_REFERENCE} DESC, id DESC LIMIT ?",
                [*params, limit],
            )

    async def browse(self, query: BrowseQuery, cutoffs: TierCutoffs) -> list[Memory]:
        """Newest id first, walking the table backwards by rowid until the page is full.

        Trigger: the planner's own choice. Why: it picks the (project, reference) index and
        sorts every row of the project by id (1.9 s cold, 0.6 s warm at 100k rows). Outcome:
        `+` keeps the project and the wide tier bands (ARCHIVED, EXPIRED) off the indexes, so
        SQLite scans by rowid from the newest and stops after `limit` matches (0.2 ms); a
        filter that matches nothing scans the table (60-100 ms at 100k). ACTIVE and RECENT,
        bands of hours that hold few rows, still use the reference index.
        """
        narrow = query.tier in (Tier.ACTIVE, Tier.RECENT)
        where = "project = :project" if narrow else "+project = :project"
        params: dict[str, Any] = {"project": query.project, "limit": query.limit}
        if query.tier is not None:
            where += f" AND {_TIER_RANGE[query.tier]}"
            params.update(_cutoff_params(cutoffs))
        if query.before_id is not None:
            where += " AND id < :before_id"
            params["before_id"] = query.before_id
        where += _browse_filters(query, params)
        async with self._session.read("browse"):
            return await self._session.fetch_memories(
                f"SELECT * FROM context_snapshots WHERE {where} ORDER BY id DESC LIMIT :limit",
                params,
            )

    async def use_ages(self, project: str, now: datetime, *, max_days: int) -> dict[int, int]:
        """One range count per day over the covering (project, reference) index.

        A GROUP BY of the computed age reads every row and sorts (150-200 ms at 100k rows);
        counting each day's range of the index reads only index entries (12-28 ms).
        """
        params: dict[str, Any] = {"project": project}
        counts = []
        for day in range(max_days + 1):
            # Day 0 has no upper bound: a reference after `now` (a clock behind the writer's)
            # counts as today; the last day has no lower bound: it counts everything older.
            bounds = ""
            if day > 0:
                params[f"newer{day}"] = encode_time(now - timedelta(days=day))
                bounds += f" AND {_REFERENCE} <= :newer{day}"
            if day < max_days:
                params[f"older{day}"] = encode_time(now - timedelta(days=day + 1))
                bounds += f" AND {_REFERENCE} > :older{day}"
            counts.append(
                f"(SELECT count(*) FROM context_snapshots WHERE project = :project{bounds})"
            )
        async with self._session.read("use ages"):
            rows = await self._session.fetch("SELECT " + ", ".join(counts), params)
        found = {day: int(n) for day, n in enumerate(rows[0])}
        return {day: n for day, n in found.items() if n}

    # -- maintenance ----------------------------------------------------------------------

    async def recalculate_tiers(self, cutoffs: TierCutoffs, project: str | None) -> int:
        """One set-based UPDATE over the project (or all rows)."""
        async with self._session.write("tier recalculation") as db:
            return await self._recalculate(db, cutoffs, project)

    async def _recalculate(
        self, db: aiosqlite.Connection, cutoffs: TierCutoffs, project: str | None
    ) -> int:
        params: dict[str, Any] = _cutoff_params(cutoffs)
        scope = ""
        if project is not None:
            scope = " AND project = :project"
            params["project"] = project
        cur = await db.execute(
            f"UPDATE context_snapshots SET memory_tier = {_LIVE_TIER}"
            f" WHERE memory_tier IS NOT {_LIVE_TIER}{scope}",
            params,
        )
        return cur.rowcount

    async def prune_expired(
        self, cutoffs: TierCutoffs, project: str | None, *, limit: int | None, dry_run: bool
    ) -> PruneOutcome:
        """Delete (or list, when dry_run) EXPIRED rows, least accessed first, then oldest."""
        params: dict[str, Any] = {
            **_cutoff_params(cutoffs),
            "limit": -1 if limit is None else limit,
        }
        scope = ""
        if project is not None:
            scope = " AND project = :project"
            params["project"] = project
        # The live condition guards the delete even if the stored tier were stale.
        candidates = (
            "SELECT id FROM context_snapshots"
            f" WHERE {_REFERENCE} <= :archived_after AND pinned = 0{scope}"
            f" ORDER BY access_count, {_REFERENCE}, id LIMIT :limit"
        )
        if dry_run:
            async with self._session.read("prune (dry run)"):
                rows = await self._session.fetch(candidates, params)
            return PruneOutcome(ids=[int(r[0]) for r in rows], dry_run=True)
        async with indexed_write(self._session, "prune") as db:
            await self._recalculate(db, cutoffs, project)
            rows = await self._session.fetch(
                "DELETE FROM context_snapshots WHERE memory_tier = 'EXPIRED' AND pinned = 0"
                f" AND id IN ({candidates}) RETURNING id",
                params,
            )
        return PruneOutcome(ids=sorted(int(r[0]) for r in rows), dry_run=False)

    async def delete_expired(self, ids: Sequence[int], cutoffs: TierCutoffs) -> list[int]:
        """Delete those of `ids` that are EXPIRED by their reference time; see the port.

        Trigger: every row deleted also drops its vectors, through a foreign-key cascade and
        a trigger that deletes one vec0 row per statement. Why: vec0 deletes row by row cost
        ~100 us each, by an IN list ~37 us (at 100k rows). Outcome: the doomed rows' vectors
        are deleted first by id list in the same transaction (178 -> 92 us per pruned row).
        """
        if not ids:
            return []
        listed = ", ".join(str(int(i)) for i in ids)  # ints from our own listing
        async with indexed_write(self._session, "prune"):
            # The live condition keeps a row that was used since it was listed.
            doomed = [
                int(r[0])
                for r in await self._session.fetch(
                    f"SELECT id FROM context_snapshots WHERE id IN ({listed})"
                    f" AND {_REFERENCE} <= ? AND pinned = 0 ORDER BY id",
                    (encode_time(cutoffs.archived_after),),
                )
            ]
            await delete_listed(self._session, doomed)
        return doomed

    async def stats(self, project: str, cutoffs: TierCutoffs) -> StoreStats:
        """Live tier and layer counts, sizes and dates, in time independent of the store size.

        The kept counters (memory_counts, migration 0006) hold rows per layer and *stored* tier.
        The tier as of now differs only for rows whose reference time crossed a boundary since
        their tier was stored; `MOVED` finds exactly those through a covering index, and each
        is moved from its stored tier to its live one (they are also `stale_tiers`). After the
        daily recalculation that is a day's worth of ageing, not the store.
        """
        params: dict[str, Any] = {**_cutoff_params(cutoffs), "project": project}
        async with self._session.snapshot("stats"):
            kept = await self._session.fetch(KEPT, (project,))
            moved = await self._session.fetch(MOVED, params)
            dates = await self._session.fetch(DATES, {"p": project})
            size = await self._session.fetch(SIZE)
            marks = await self._session.fetch(MARKS, {"p": project})
        oldest, newest = dates[0][0], dates[0][1]
        return store_stats(
            project,
            fold_counts(kept, moved),
            int(size[0][0]),
            decode_time(str(oldest)) if oldest else None,
            decode_time(str(newest)) if newest else None,
            pinned=int(marks[0][0]),
            superseded=int(marks[0][1]),
        )

    async def has_project(self, project: str) -> bool:
        """Whether a project holds a row (a lookup on the project prefix of an index)."""
        async with self._session.read("check project"):
            rows = await self._session.fetch(
                "SELECT 1 FROM context_snapshots WHERE project = ? LIMIT 1", (project,)
            )
        return bool(rows)

    async def projects(self) -> list[str]:
        """Projects holding rows."""
        async with self._session.read("list projects"):
            rows = await self._session.fetch(
                "SELECT DISTINCT project FROM context_snapshots ORDER BY 1"
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
