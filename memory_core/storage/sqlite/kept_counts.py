"""A project's stats from the kept counters, as plain values; the lean reader of `memstrata stats`.

The statements and the arithmetic of stats live here once: `SqliteMemoryRepository.stats`
runs them through the store's aiosqlite session, and `read_kept_stats` runs them on a plain
read-only sqlean connection. Trigger: a cold `memstrata stats` must answer in under 250 ms
(issue 21), and importing asyncio, structlog and pydantic alone costs about that. Why plain
values: this module imports neither them nor the domain models, so a process that only prints
the counts never loads them. Outcome: both paths fold the same rows the same way.

`store_is_ready` says whether opening the store the full way (server.backends.open_backend,
then the embedding model check) would change nothing: every shipped migration applied and no
other, no keyword-table work queued, the configured model recorded and its vector tables in
place. Only then does the lean reader answer what the full path would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_core.config.tier_windows import cutoff_instants
from memory_core.storage.counts_fold import LAYERS, TIERS, fold_counts
from memory_core.storage.migrations import load_migrations, migrations_dir
from memory_core.storage.sqlite.times import encode_time

__all__ = [
    "DATES",
    "KEPT",
    "LAYERS",
    "LIVE_TIER",
    "MARKS",
    "MOVED",
    "REFERENCE",
    "SIZE",
    "TIERS",
    "KeptStats",
    "cutoff_params",
    "fold_stats",
    "open_query_only",
    "read_kept_stats",
    "store_is_ready",
    "stored_projects",
]


# Live tier of a row from its reference time; the cutoffs come from domain.tiers.tier_cutoffs,
# and the strict '>' matches classify_tier (an age of exactly one threshold is the older tier).
REFERENCE = "coalesce(last_accessed, created_at)"
LIVE_TIER = f"""CASE
    WHEN {REFERENCE} > :active_after THEN 'ACTIVE'
    WHEN {REFERENCE} > :recent_after THEN 'RECENT'
    WHEN {REFERENCE} > :archived_after THEN 'ARCHIVED'
    ELSE 'EXPIRED' END"""

# Rows whose stored tier is not their tier as of now, counted by (stored, live): for each stored
# tier, the reference times outside its window, one range of idx_snapshots_project_tier_reference
# each (an OR of two ranges would not use the index).
_OUTSIDE = (
    ("ACTIVE", "<= :active_after"),
    ("RECENT", "> :active_after"),
    ("RECENT", "<= :recent_after"),
    ("ARCHIVED", "> :recent_after"),
    ("ARCHIVED", "<= :archived_after"),
    ("EXPIRED", "> :archived_after"),
)
MOVED = " UNION ALL ".join(
    f"SELECT '{tier}' AS stored, {LIVE_TIER} AS live, count(*) AS n FROM context_snapshots"
    f" WHERE project = :project AND memory_tier = '{tier}' AND {REFERENCE} {bound}"
    " GROUP BY live"
    for tier, bound in _OUTSIDE
)
# The kept counters (migration 0006, never_accessed 0009) of one project.
KEPT = "SELECT layer, memory_tier, n, bytes, never_accessed FROM memory_counts WHERE project = ?"
# Oldest and newest row: two probes of the (project, created_at) index.
DATES = (
    "SELECT (SELECT min(created_at) FROM context_snapshots WHERE project = :p),"
    " (SELECT max(created_at) FROM context_snapshots WHERE project = :p)"
)
SIZE = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
# Pinned and superseded rows (migration 0013): partial indexes hold only those rows. The
# superseded count names its index: left to choose (no ANALYZE statistics), the planner took
# the (project, created_at) index and read every row of the project (65 ms at 100k rows, most
# of the dashboard overview's time); the partial index reads only the superseded rows.
MARKS = (
    "SELECT (SELECT count(*) FROM context_snapshots WHERE project = :p AND pinned = 1),"
    " (SELECT count(*) FROM context_snapshots INDEXED BY idx_snapshots_superseded_by"
    " WHERE superseded_by IS NOT NULL AND project = :p)"
)
_PROJECTS = "SELECT DISTINCT project FROM context_snapshots ORDER BY 1"

# Work the full open does before it answers (keyword_tables.build_pending_keyword_tables).
_KEYWORD_WORK = (
    "SELECT EXISTS (SELECT 1 FROM context_snapshots_fts_projects WHERE ready = 0)"
    " OR EXISTS (SELECT 1 FROM context_snapshots_fts_queue)"
)
# What SqliteVectorIndex.ensure_model leaves in place once it has run for a store: with all of
# it there, ensure_model writes nothing (every statement is IF NOT EXISTS or a no-op).
_VECTOR_OBJECTS = frozenset(
    {"context_vectors", "context_vectors_ad", "context_vectors_au", "vector_coarse_projects"}
)
_LEGACY_VECTOR_OBJECTS = frozenset({"context_vectors_bit"})


@dataclass(frozen=True)
class KeptStats:
    """Counts per tier (as of now) and layer, sizes and dates of one project, as plain values.

    `by_tier` and `by_layer` are keyed by the values of Tier and Layer, in their order;
    `oldest` and `newest` are the stored text of the instants (times.encode_time's form).
    """

    project: str
    total: int
    by_tier: dict[str, int]
    by_layer: dict[str, int]
    content_bytes: int
    database_bytes: int
    oldest: str | None
    newest: str | None
    stale_tiers: int
    never_accessed: int
    pinned: int = 0
    superseded: int = 0


def cutoff_params(
    active_after: datetime, recent_after: datetime, archived_after: datetime
) -> dict[str, str]:
    """The tier cutoffs as the statement parameters of `MOVED` (and of other live-tier SQL)."""
    return {
        "active_after": encode_time(active_after),
        "recent_after": encode_time(recent_after),
        "archived_after": encode_time(archived_after),
    }


def fold_stats(
    project: str,
    kept: Iterable[Sequence[Any]],
    moved: Iterable[Sequence[Any]],
    dates: Sequence[Any],
    database_bytes: int,
    marks: Sequence[Any] = (0, 0),
) -> KeptStats:
    """A project's stats from the rows of KEPT, MOVED (see counts_fold), DATES, MARKS, SIZE."""
    counts = fold_counts(kept, moved)
    oldest, newest = dates[0], dates[1]
    return KeptStats(
        project=project,
        total=counts.total,
        by_tier=counts.by_tier,
        by_layer=counts.by_layer,
        content_bytes=counts.content_bytes,
        database_bytes=int(database_bytes),
        oldest=str(oldest) if oldest else None,
        newest=str(newest) if newest else None,
        stale_tiers=counts.stale_tiers,
        never_accessed=counts.never_accessed,
        pinned=int(marks[0]),
        superseded=int(marks[1]),
    )


def open_query_only(path: Path) -> Any:
    """A plain sqlean connection to the existing file `path` that cannot change it.

    Opened read-write but never created (`mode=rw`), with `query_only` on: no statement of
    it can write, yet as the last connection to close it checkpoints and removes the WAL
    files as the full path's connection does (a `mode=ro` connection leaves them behind).
    No sqlite-vec: the counters, the rows and sqlite_master are plain tables, and no
    statement here touches the vec0 table. Raises sqlean.Error when the file cannot be opened.
    """
    import sqlean  # here: a test of fold_stats, or the repository, never loads it through us

    conn = sqlean.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("PRAGMA busy_timeout = 5000")  # as connection.BUSY_TIMEOUT_MS
    return conn


def store_is_ready(conn: Any, model: tuple[str, int] | None) -> bool:
    """Whether the full open (migrations, keyword catch-up, model check) would change nothing.

    Args:
        conn: A connection from `open_query_only`.
        model: The configured embedding model's (id, dims), None when it is 'none' (the full
            path then checks no model).

    False, never an error, for anything the full path would do or refuse: a newer or older
    schema, queued keyword work, another model recorded (it refuses naming `reindex`), no
    model recorded yet or its vector tables missing (it records and creates them).
    """
    objects = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    if "schema_migrations" not in objects:
        return False
    applied = {str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations")}
    shipped = {m.name for m in load_migrations(migrations_dir("sqlite"))}
    if applied != shipped or conn.execute(_KEYWORD_WORK).fetchone()[0]:
        return False
    if model is None:
        return True
    meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    return (
        meta.get("embedding_model") == model[0]
        and meta.get("embedding_dims") == str(model[1])
        and meta.get("vec0_large_projects") == "coarse"
        and objects >= _VECTOR_OBJECTS
        and not _LEGACY_VECTOR_OBJECTS & objects
    )


def stored_projects(conn: Any) -> list[str]:
    """Projects holding rows, in order (as SqliteMemoryRepository.projects)."""
    return [str(r[0]) for r in conn.execute(_PROJECTS)]


def read_kept_stats(
    conn: Any,
    projects: Sequence[str],
    now: datetime,
    windows: tuple[float, float, float],
) -> list[KeptStats]:
    """Stats of each of `projects` as of `now`, all read in one snapshot.

    Args:
        conn: A connection from `open_query_only`.
        projects: Project names (valid ones: the lean path passes stored names only).
        now: The instant the tiers are taken at.
        windows: The tier policy's active hours, recent hours and archived days.
    """
    params = cutoff_params(*cutoff_instants(now, *windows))
    conn.execute("BEGIN")
    try:
        size = int(conn.execute(SIZE).fetchone()[0])
        return [
            fold_stats(
                project,
                conn.execute(KEPT, (project,)).fetchall(),
                conn.execute(MOVED, {**params, "project": project}).fetchall(),
                conn.execute(DATES, {"p": project}).fetchone(),
                size,
                conn.execute(MARKS, {"p": project}).fetchone(),
            )
            for project in projects
        ]
    finally:
        conn.execute("COMMIT")
