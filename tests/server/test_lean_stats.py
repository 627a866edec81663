"""`memstrata stats` from the kept counts (server/cli/lean_stats.py) against the full path.

The lean path answers only when its answer is certainly the full one; these tests hold it to
the full path's bytes on stores with several projects, tiers and layers (after writes that
left stored tiers stale, a recalculation, a prune and an import), and show that each
condition it cannot read exactly (another setting, another schema, another model, pending
work, an empty store, an unknown project, a verbose run) leaves the answer to the full path,
which still answers right. The imports it avoids: tests/server/test_import_boundaries.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core.domain.models import Layer, Tier
from memory_core.embeddings.registry import DEFAULT_MODEL, parse_embedding_model
from memory_core.storage.migrations import migrations_dir
from memory_core.storage.sqlite import (
    SqliteSession,
    SqliteVectorIndex,
    apply_migrations,
    kept_counts,
    open_database,
)
from memory_core.storage.sqlite.times import encode_time
from server.cli.commands import main as full_main
from server.cli.lean_stats import _DEFAULT_MODEL, _DEFAULT_NAMES, lean_stats
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.fakes import FrozenClock

NOW = datetime.now(UTC)


def full(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The full path: what `memstrata` ran before the lean one (server.cli.commands.main)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        full_main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def lean(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int | None, str]:
    capsys.readouterr()  # what earlier steps (a store's writes) logged
    code = lean_stats(list(argv), os.environ)
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "stats.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(path))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    for name in [n for n in os.environ if n.upper().startswith("MEMSTRATA_")]:
        if name.upper() not in ("MEMSTRATA_DB", "MEMSTRATA_EMBEDDING_MODEL", "MEMSTRATA_TOOLSETS"):
            monkeypatch.delenv(name)
    return path


def _settings(db: Path) -> Settings:
    return Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))


def write_aged(db: Path) -> None:
    """Three projects, every layer, rows written 40 days, 5 days, 3 hours and 1 minute ago.

    Written with a clock in the past and never recalculated, so their stored tiers are
    stale (the rows the stats move between tiers); the ages are far from every boundary.
    """

    async def write() -> None:
        clock = FrozenClock(NOW - timedelta(days=40))
        async with open_container(_settings(db), clock) as c:
            m = c.memories
            for age, tag in (
                (timedelta(days=40), "old"),
                (timedelta(days=5), "week"),
                (timedelta(hours=3), "today"),
                (timedelta(minutes=1), "now"),
            ):
                clock.set(NOW - age)
                await m.append("alpha", Layer.EPISODIC, f"{tag}: deployed billing to staging")
                await m.append("alpha", Layer.WORKING, f"{tag}: scratch idea", session_id="s1")
                await m.learn("alpha", f"user.{tag}", f"{tag} fact, with ünïcödé")
                await m.append(
                    "beta", Layer.PROCEDURAL, f"{tag}: run the dry-run first", key=f"deploy {tag}"
                )
            clock.set(NOW - timedelta(days=45))
            await m.learn("gamma/x@y", "only.fact", "only expired here")

    asyncio.run(write())


def assert_same(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The lean path answers, with exactly the full path's bytes; returns them."""
    code, lean_out = lean(capsys, *argv)
    assert code == 0, "the lean path should have answered"
    full_code, full_out, _ = full(capsys, *argv)
    assert full_code == 0
    assert lean_out == full_out
    return full_out


ARGVS = (
    ("stats", "--json"),
    ("stats",),
    ("stats", "--project", "beta", "--json"),
    ("stats", "-p", "alpha"),
    ("stats", "--json", "--project=gamma/x@y"),
)


@pytest.mark.parametrize("argv", ARGVS)
def test_the_lean_answer_is_the_full_one_with_stale_tiers(
    db: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    write_aged(db)
    out = assert_same(capsys, *argv)
    if argv == ("stats", "--json"):
        report = json.loads(out)
        alpha = next(p for p in report["projects"] if p["project"] == "alpha")
        assert alpha["by_tier"] == {"ACTIVE": 3, "RECENT": 3, "ARCHIVED": 3, "EXPIRED": 3}
        assert alpha["stale_tiers"] == 9  # all but the newest, stored as ACTIVE
        assert [p["project"] for p in report["projects"]] == ["alpha", "beta", "gamma/x@y"]
        gamma = report["projects"][2]
        codes = [h["code"] for h in gamma["health"]]
        assert codes == ["prune_suggested", "inactive", "stale_tiers"]


def test_the_lean_answer_is_the_full_one_after_recalculation_prune_and_import(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_aged(db)
    assert full(capsys, "maintain", "--recalculate")[0] == 0
    for argv in ARGVS:
        report = assert_same(capsys, *argv)
    assert json.loads(assert_same(capsys, "stats", "--json"))["projects"][0]["stale_tiers"] == 0
    assert full(capsys, "maintain", "--prune")[0] == 0
    for argv in ARGVS[:4]:
        report = assert_same(capsys, *argv)
    assert "gamma" not in report
    assert full(capsys, "search", "billing", "-p", "alpha", "--mode", "keyword")[0] == 0
    read = json.loads(assert_same(capsys, "stats", "--json", "-p", "alpha"))["projects"][0]
    assert read["never_accessed"] < read["total"]  # the search handed some out

    export = tmp_path / "all.jsonl"
    assert full(capsys, "export", str(export))[0] == 0
    other = tmp_path / "imported.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(other))
    assert full(capsys, "import", str(export))[0] == 0
    for argv in ARGVS[:4]:
        assert_same(capsys, *argv)


def test_the_default_model_store_and_the_table_format(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default model configured (recorded by `migrate`), and the plain table."""
    monkeypatch.delenv("MEMSTRATA_EMBEDDING_MODEL")
    assert full(capsys, "migrate")[0] == 0
    write_aged(db)  # keyword-only writes into a store that records the default model
    for value in _DEFAULT_NAMES:
        monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", value)
        out = assert_same(capsys, "stats")
    lines = out.splitlines()
    assert re.fullmatch(rf"memstrata: {re.escape(str(db))} \(\d+ bytes\)", lines[0])
    header = re.split(r"\s{2,}", lines[1].strip())
    assert header == [
        "project",
        "total",
        *(t.value for t in Tier),
        *(layer.value for layer in Layer),
        "text bytes",
        "never read",
    ]
    alpha = dict(zip(header, re.split(r"\s{2,}", lines[2].strip()), strict=True))
    assert alpha["project"] == "alpha" and alpha["total"] == "12" and alpha["EXPIRED"] == "3"
    assert len({len(line) for line in lines[1:5]}) == 1  # aligned columns
    assert "project gamma/x@y: 1 memories" in out
    assert "  note: 1 of 1 memories are EXPIRED; call `prune_expired_contexts`" in out


def test_the_lean_constants_are_the_domain_and_settings_ones() -> None:
    assert tuple(t.value for t in Tier) == kept_counts.TIERS
    assert tuple(layer.value for layer in Layer) == kept_counts.LAYERS
    for name in _DEFAULT_NAMES:
        spec = parse_embedding_model(name)
        assert (spec.model_id, spec.dims) == _DEFAULT_MODEL
    assert _DEFAULT_MODEL[0] == DEFAULT_MODEL
    assert parse_embedding_model("none").kind == "none"


def test_a_stored_time_is_written_as_pydantic_writes_it(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whole seconds (pydantic drops a zero fraction) and a year below 1000 (four digits)."""
    write_aged(db)
    conn = kept_counts.open_query_only(db)
    conn.close()
    import sqlean

    raw = sqlean.connect(str(db))
    raw.execute(
        "UPDATE context_snapshots SET created_at = '0999-03-04T05:06:07.000000Z'"
        " WHERE project = 'beta' AND id = (SELECT min(id) FROM context_snapshots"
        " WHERE project = 'beta')"
    )
    raw.execute(
        "UPDATE context_snapshots SET created_at = '2026-01-02T03:04:05.000000Z'"
        " WHERE project = 'alpha' AND id = (SELECT min(id) FROM context_snapshots"
        " WHERE project = 'alpha')"
    )
    raw.commit()
    raw.close()
    report = json.loads(assert_same(capsys, "stats", "--json"))
    oldest = {p["project"]: p["oldest"] for p in report["projects"]}
    assert oldest["beta"] == "0999-03-04T05:06:07Z" and oldest["alpha"] == "2026-01-02T03:04:05Z"


# --- where the full path answers ------------------------------------------------------------


def _falls_back(capsys: pytest.CaptureFixture[str], *argv: str) -> None:
    code, out = lean(capsys, *argv)
    assert code is None and out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ("stats", "--help"),
        ("stats", "--js"),  # argparse takes an abbreviation; its own parser decides
        ("stats", "-v"),
        ("-v", "stats"),
        ("stats", "--json", "--json"),
        ("stats", "-p"),
        ("stats", "--project", "--json"),
        ("stats", "extra"),
        ("search", "x"),
    ],
)
def test_a_command_line_it_does_not_read_exactly_falls_back(
    db: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    write_aged(db)
    _falls_back(capsys, *argv)


def test_a_verbose_run_takes_the_full_path_which_logs_the_opened_line(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_aged(db)
    _falls_back(capsys, "-v", "stats")
    code, _, err = full(capsys, "-v", "stats")
    assert code == 0 and "store.opened" in err
    for level in ("INFO", "DEBUG", "info"):
        monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", level)
        _falls_back(capsys, "stats")
    for level in ("WARNING", "ERROR"):
        monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", level)
        assert_same(capsys, "stats")
        assert full(capsys, "stats")[2] == ""  # nothing logged at these levels


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMSTRATA_DATABASE_URL", "postgresql://u@127.0.0.1:9/none"),
        ("MEMSTRATA_DATABASE_URL", ""),
        ("MEMSTRATA_TIERS__ACTIVE_HOURS", "4"),
        ("MEMSTRATA_TIERS", '{"archived_days": 3}'),
        ("MEMSTRATA_EMBEDDING_MODEL", "st:some-model"),
        ("MEMSTRATA_EMBEDDING_MODEL", "gpt-embed-9000"),
        ("MEMSTRATA_EMBEDDING_DIMS", "384"),
        ("MEMSTRATA_LOG_FORMAT", "xml"),
        ("MEMSTRATA_PROJECT_SCOPE", "cwd"),
        ("MEMSTRATA_TOOLSETS", "nonsense"),
        ("MEMSTRATA_HTTP_PORT", "not-a-port"),
        ("MEMSTRATA_DB", ":memory:"),
        ("MEMSTRATA_DB", ""),
        ("memstrata_db", "/elsewhere.db"),  # a second spelling of MEMSTRATA_DB
    ],
)
def test_a_setting_it_does_not_read_exactly_falls_back(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
) -> None:
    write_aged(db)
    monkeypatch.setenv(name, value)
    _falls_back(capsys, "stats", "--json")


def test_another_tier_policy_is_the_full_paths_answer(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_aged(db)
    default = json.loads(assert_same(capsys, "stats", "--json"))
    monkeypatch.setenv("MEMSTRATA_TIERS__ARCHIVED_DAYS", "3")
    _falls_back(capsys, "stats", "--json")
    code, out, _ = full(capsys, "stats", "--json")
    assert code == 0
    assert json.loads(out)["projects"][0]["by_tier"]["EXPIRED"] == 6  # 40 and 5 days old
    assert default["projects"][0]["by_tier"]["EXPIRED"] == 3


def test_a_missing_store_is_created_by_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _falls_back(capsys, "stats", "--json")
    assert not db.exists()
    code, out, _ = full(capsys, "stats", "--json")
    assert code == 0 and json.loads(out)["projects"][0]["health"][0]["code"] == "empty"
    _falls_back(capsys, "stats", "--json")  # migrated now, but empty: the default project


def test_an_unknown_or_invalid_project_gets_the_full_answer(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_aged(db)
    _falls_back(capsys, "stats", "--project", "nobody", "--json")
    code, out, _ = full(capsys, "stats", "--project", "nobody", "--json")
    assert code == 0 and json.loads(out)["projects"][0]["total"] == 0
    _falls_back(capsys, "stats", "--project", "bad name")
    code, out, err = full(capsys, "stats", "--project", "bad name")
    assert code == 1 and out == "" and err.startswith("memstrata: project: must be")


def test_a_stored_name_the_rule_now_refuses_gets_the_full_answer(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An early version accepted a name ending in a newline; the full path refuses it now."""
    write_aged(db)
    stamp = encode_time(NOW)
    _sql(
        db,
        "INSERT INTO context_snapshots (project, layer, content, created_at, updated_at,"
        f" content_hash) VALUES ('work' || char(10), 'episodic', 'x', '{stamp}', '{stamp}', 'h')",
    )
    assert full(capsys, "stats", "-p", "alpha")[0] == 0  # builds the new keyword table
    _falls_back(capsys, "stats", "--json")
    assert_same(capsys, "stats", "--json", "-p", "alpha")  # a valid name is still answered
    code, out, err = full(capsys, "stats", "--json")
    assert code == 1 and out == "" and "project: must be" in err


def _sql(db: Path, *statements: str) -> None:
    import sqlean

    conn = sqlean.connect(str(db), isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()


def test_an_older_store_is_migrated_by_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A store at 0010 (before the per-project keyword tables), with rows: migrated first."""
    older = tmp_path / "migrations"
    older.mkdir()
    for path in sorted(migrations_dir("sqlite").glob("*.sql"))[:10]:
        shutil.copy(path, older / path.name)

    async def build() -> None:
        conn = await open_database(db)
        try:
            await apply_migrations(conn, older)
        finally:
            await conn.close()

    asyncio.run(build())
    stamp = encode_time(NOW - timedelta(days=3))
    _sql(
        db,
        *(
            "INSERT INTO context_snapshots (project, layer, content, created_at, updated_at,"
            f" content_hash) VALUES ('{project}', 'episodic', 'text {i}', '{stamp}', '{stamp}',"
            f" 'h{project}{i}')"
            for i, project in enumerate(("alpha", "alpha", "beta"))
        ),
    )
    _falls_back(capsys, "stats", "--json")
    code, out, _ = full(capsys, "stats", "--json")
    assert code == 0
    alpha = json.loads(out)["projects"][0]
    assert alpha["total"] == 2 and alpha["by_tier"]["ARCHIVED"] == 2 and alpha["stale_tiers"] == 2
    assert assert_same(capsys, "stats", "--json") == out  # migrated now: the lean path answers


def test_a_newer_store_is_refused_by_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_aged(db)
    _sql(db, "INSERT INTO schema_migrations VALUES ('0099_from_the_future', 'x')")
    _falls_back(capsys, "stats")
    code, out, err = full(capsys, "stats")
    assert code == 1 and out == "" and "upgraded by a newer memstrata" in err


def test_queued_keyword_work_is_done_by_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_aged(db)
    _sql(db, "UPDATE context_snapshots_fts_projects SET ready = 0 WHERE project = 'beta'")
    _falls_back(capsys, "stats", "--json")
    assert full(capsys, "stats", "--json")[0] == 0
    assert_same(capsys, "stats", "--json")  # built now


def _record_model(db: Path, model: str, dims: int) -> None:
    async def record() -> None:
        conn = await open_database(db)
        try:
            await SqliteVectorIndex(SqliteSession(conn)).ensure_model(model, dims)
        finally:
            await conn.close()

    asyncio.run(record())


def test_another_model_is_refused_by_the_full_path_naming_reindex(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_aged(db)
    _record_model(db, "other-model", 384)
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", DEFAULT_MODEL)
    _falls_back(capsys, "stats", "--json")
    code, out, err = full(capsys, "stats", "--json")
    assert code == 1 and out == "" and "memstrata reindex" in err
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")  # no model checked: answered
    assert_same(capsys, "stats", "--json")


def test_a_model_not_recorded_yet_is_recorded_by_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_aged(db)  # embedding model 'none': nothing recorded
    monkeypatch.delenv("MEMSTRATA_EMBEDDING_MODEL")
    _falls_back(capsys, "stats", "--json")
    assert full(capsys, "stats", "--json")[0] == 0  # records it and creates its tables
    assert_same(capsys, "stats", "--json")


@pytest.mark.parametrize(
    "undo",
    [
        "DELETE FROM meta WHERE key = 'vec0_large_projects'",
        "DROP TRIGGER context_vectors_au",
        "DROP TABLE vector_coarse_projects",
        "CREATE TABLE context_vectors_bit (id INTEGER PRIMARY KEY)",
        "UPDATE meta SET value = '768' WHERE key = 'embedding_dims'",
    ],
)
def test_vector_tables_not_in_place_are_left_to_the_full_path(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, undo: str
) -> None:
    write_aged(db)
    monkeypatch.delenv("MEMSTRATA_EMBEDDING_MODEL")
    _record_model(db, DEFAULT_MODEL, 384)
    assert_same(capsys, "stats", "--json")
    _sql(db, undo)
    _falls_back(capsys, "stats", "--json")


def test_the_console_script_takes_the_lean_path_or_the_full_one(db: Path, tmp_path: Path) -> None:
    """Through server.cli.main in a fresh process: the same bytes either way."""
    write_aged(db)
    runner = (
        "import sys\nfrom server.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "finally:\n    sys.stderr.write('PYDANTIC %s\\n' % ('pydantic' in sys.modules))\n"
    )
    env = {"MEMSTRATA_DB": str(db), "MEMSTRATA_EMBEDDING_MODEL": "none", "PATH": "/usr/bin:/bin"}

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", runner, "stats", "--json"],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )

    quick = run()
    slow = run(MEMSTRATA_LOG_LEVEL="INFO")
    assert "PYDANTIC False" in quick.stderr and "PYDANTIC True" in slow.stderr
    assert quick.stdout == slow.stdout and json.loads(quick.stdout)["projects"]
