"""`memstrata stats` from the kept counts, without pydantic, asyncio, structlog or rich.

Trigger: a cold `memstrata stats` on a 10k store must answer in under 250 ms (issue 21),
and importing asyncio, structlog and pydantic (with its first model) costs about that before
any memstrata code runs (docs/benchmarks.md, "Cold processes, round four"). The counts it
prints are kept in constant time by the store (memory_core/storage/sqlite/kept_counts.py).

Why this path is safe: it answers only when its answer is certainly the full path's, and
returns None (the full path then runs unchanged) otherwise:
- the command line is `stats` with only `--json` and `--project P` / `-p P` (no `-v`: a
  verbose run takes the full path, which logs the `store.opened` line; `--help`, a typo or
  an abbreviation: argparse's own answer);
- every MEMSTRATA_* variable set is one whose value this module reads exactly the settings'
  way (the file, the embedding model's default or 'none', a quiet log level, ...); any
  other (a tier policy, PostgreSQL, a sentence-transformers model) is left to the settings;
- the SQLite file exists, is migrated to this version with no keyword work queued, and
  records the configured embedding model with its tables in place (else the full path
  migrates, builds, records, or refuses naming `reindex`);
- the store holds rows, and a named project is one of its projects (an empty store shows the
  default project, whose name may come from git; an unknown name is checked and shown as
  zeros by the full path), and every name it reports passes `check_project`'s pattern.
The equivalence is tested (tests/server/test_lean_stats.py), as are the imports it avoids
(tests/server/test_import_boundaries.py).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.early_env import default_db_path, env_values

if TYPE_CHECKING:
    from memory_core.storage.sqlite.kept_counts import KeptStats

__all__ = ["lean_stats"]

# The embedding model values the settings read as the default ONNX model (embeddings.registry).
# A test holds these to parse_embedding_model; any other value takes the full path.
_DEFAULT_MODEL = ("all-MiniLM-L6-v2-int8", 384)
_DEFAULT_NAMES = ("", "default", _DEFAULT_MODEL[0])

# MEMSTRATA_* variables this path reads (or may ignore), each with the values it accepts as
# the settings would; any other variable set, or another value, takes the full path.
_QUIET_LEVELS = frozenset({"WARNING", "ERROR"})  # -v or INFO/DEBUG: the full path logs
_LOG_FORMATS = frozenset({"json", "console"})
_SCOPES = frozenset({"fixed", "git"})


class _Args:
    """The options of a `stats` command line this path reads."""

    def __init__(self) -> None:
        self.json = False
        self.project: str | None = None


def _command_line(argv: Sequence[str]) -> _Args | None:
    """`stats [--json] [--project P | -p P | --project=P]`, each option at most once; else None."""
    args = _Args()
    words = list(argv)
    if not words or words.pop(0) != "stats":
        return None
    seen: set[str] = set()
    while words:
        word = words.pop(0)
        if word == "--json":
            option, value = "json", None
        elif word in ("--project", "-p") and words and not words[0].startswith("-"):
            option, value = "project", words.pop(0)
        elif word.startswith("--project=") and len(word) > len("--project="):
            option, value = "project", word.removeprefix("--project=")
        else:
            return None
        if option in seen:
            return None
        seen.add(option)
        if value is None:
            args.json = True
        else:
            args.project = value
    return args


def _settings(environ: Mapping[str, str]) -> tuple[Path, tuple[str, int] | None] | None:
    """The database file and the embedding model's (id, dims), None for 'none'.

    None instead when a MEMSTRATA_* variable is set that only the settings may read.
    """
    names = {key.upper() for key in environ if key.upper().startswith("MEMSTRATA_")}
    read: dict[str, str] = {}
    for name in names:
        values = env_values(environ, name)
        if len(values) != 1:
            return None  # two spellings of one name: which one wins is the settings' rule
        read[name.removeprefix("MEMSTRATA_")] = values[0]
    db = default_db_path()
    model: tuple[str, int] | None = _DEFAULT_MODEL
    for name, value in read.items():
        if name == "DB" and value and str(Path(value)) != ":memory:":
            db = Path(value)
        elif name == "EMBEDDING_MODEL" and value.strip() in (*_DEFAULT_NAMES, "none"):
            model = None if value.strip() == "none" else _DEFAULT_MODEL
        elif name == "LOG_LEVEL" and value in _QUIET_LEVELS:
            pass  # nothing to log: the full path at this level logs nothing either
        elif name == "LOG_FORMAT" and value in _LOG_FORMATS:
            pass
        elif name == "PROJECT_SCOPE" and value in _SCOPES:
            pass  # the default project matters only to an empty store, not answered here
        elif name == "PROJECT" or (name == "TOOLSETS" and _known_toolsets(value)):
            pass
        else:
            return None
    return db, model


def _known_toolsets(value: str) -> bool:
    from server.toolsets import parse_toolsets  # an enum and a split: no pydantic

    try:
        parse_toolsets(value)
    except ValueError:
        return False
    return True


def _json_time(stored: str | None) -> str | None:
    """A stored instant as pydantic writes a UTC datetime in JSON (StatsOut's `oldest`)."""
    if stored is None:
        return None
    value = datetime.fromisoformat(stored)
    if value.tzinfo is None or value.utcoffset():
        return value.isoformat()
    # pydantic: 'Z' for UTC, and no fraction when the microseconds are zero (as isoformat).
    return value.replace(tzinfo=None).isoformat() + "Z"


def _report(stats: KeptStats) -> dict[str, Any]:
    """A KeptStats as `StatsOut.model_dump(mode="json")` gives it (same keys, same order)."""
    from memory_core.domain.health_findings import health_findings

    notes = health_findings(stats.total, stats.by_tier, stats.stale_tiers)
    return {
        "project": stats.project,
        "total": stats.total,
        "by_tier": dict(stats.by_tier),
        "by_layer": dict(stats.by_layer),
        "content_bytes": stats.content_bytes,
        "database_bytes": stats.database_bytes,
        "oldest": _json_time(stats.oldest),
        "newest": _json_time(stats.newest),
        "stale_tiers": stats.stale_tiers,
        "never_accessed": stats.never_accessed,
        "pinned": stats.pinned,
        "superseded": stats.superseded,
        "health": [{"code": code, "message": message} for code, message in notes],
    }


def lean_stats(
    argv: Sequence[str], environ: Mapping[str, str], now: datetime | None = None
) -> int | None:
    """Print `memstrata stats` from the kept counts and return its exit code (0).

    Returns None, having printed nothing, whenever the full path's answer might differ (see
    the module docstring): the caller then runs the full path.
    """
    args = _command_line(argv)
    found = _settings(environ) if args is not None else None
    if args is None or found is None:
        return None
    db, model = found
    if not db.is_file():
        return None  # the full path creates and migrates it (or says why it cannot)
    from memory_core.config.tier_windows import ACTIVE_HOURS, ARCHIVED_DAYS, RECENT_HOURS
    from memory_core.domain.project_names import PROJECT_NAME
    from memory_core.storage.sqlite import kept_counts

    try:
        conn = kept_counts.open_query_only(db)
    except Exception:
        return None
    try:
        if not kept_counts.store_is_ready(conn, model):
            return None
        projects = kept_counts.stored_projects(conn)
        if args.project is not None:
            projects = [args.project] if args.project in projects else []
        if not projects or not all(PROJECT_NAME.match(p) for p in projects):
            return None  # the full path shows the default project, or refuses the name
        stats = kept_counts.read_kept_stats(
            conn,
            projects,
            now or datetime.now(UTC),
            (ACTIVE_HOURS, RECENT_HOURS, ARCHIVED_DAYS),
        )
    except Exception:
        return None
    finally:
        conn.close()
    from server.cli.stats_output import stats_json, stats_table

    render = stats_json if args.json else stats_table
    sys.stdout.write(render(str(db), [_report(s) for s in stats]) + "\n")
    return 0
