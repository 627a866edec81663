import json
import logging
from pathlib import Path

import pytest
import structlog

from server.cli.commands import main
from server.logging import configure_logging
from server.settings import Settings, default_db_path


def test_settings_come_from_memstrata_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("MEMSTRATA_TIERS__ACTIVE_HOURS", "2")
    monkeypatch.setenv("MEMSTRATA_LIMITS__WORKING_CAP", "7")
    monkeypatch.setenv("MEMSTRATA_SCHEDULE__PRUNE_CRON", "")
    s = Settings()
    assert s.db == tmp_path / "x.db"
    assert s.tiers.active_hours == 2 and s.limits.working_cap == 7
    assert not s.schedule.prune_cron


def test_default_database_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_path() == tmp_path / "memstrata" / "memory.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_db_path() == Path.home() / ".local/share/memstrata/memory.db"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    db = tmp_path / "cli.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(db))
    return db


def test_cli_migrate_maintain_and_stats(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "migrate")
    assert code == 0 and "database up to date" in err and cli_env.exists()
    code, out, _ = run_cli(capsys, "maintain", "--recalculate", "--prune", "--limit", "5", "--json")
    assert code == 0 and json.loads(out) == {"tiers_changed": 0, "pruned": 0}
    code, out, _ = run_cli(capsys, "maintain", "--prune", "--dry-run", "--project", "x", "--json")
    assert json.loads(out) == {"would_prune": 0, "ids": []}
    code, out, _ = run_cli(capsys, "stats", "--json")
    assert code == 0 and json.loads(out)["projects"][0]["total"] == 0
    code, out, _ = run_cli(capsys, "stats")
    assert "project default: 0 memories" in out and "No memories yet" in out


def test_cli_usage_errors_exit_2(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_cli(capsys, "maintain")
    assert code == 2 and "--recalculate" in err
    monkeypatch.setenv("MEMSTRATA_TIERS__ACTIVE_HOURS", "-1")
    code, _, err = run_cli(capsys, "stats")
    assert code == 2 and "invalid MEMSTRATA_* configuration" in err


def test_cli_reports_domain_errors_without_traceback(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "stats", "--project", "bad name")
    assert code == 1 and err.startswith("memstrata: project: must be")  # no log lines first
    assert "Traceback" not in err


def test_json_logs_go_to_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        configure_logging("INFO", "json")
        structlog.get_logger("t").info("memory.stored", memory_id=3)
        logging.getLogger("mcp").warning("from stdlib")
        out, err = capsys.readouterr()
        assert out == ""
        lines = [json.loads(line) for line in err.splitlines()]
        assert lines[0]["event"] == "memory.stored" and lines[0]["memory_id"] == 3
        assert lines[0]["level"] == "info" and lines[0]["timestamp"].endswith("Z")
        assert lines[1]["event"] == "from stdlib" and lines[1]["logger"] == "mcp"
        configure_logging("INFO", "console")
        structlog.get_logger("t").info("console.line")
        assert "console.line" in capsys.readouterr().err
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("MEMSTRATA_SCHEDULE__PRUNE_CRON", "every sunday", "Wrong number of fields"),
        ("MEMSTRATA_SCHEDULE__RECALCULATE_CRON", "0 0 * * 9", "day-of-week"),
        ("MEMSTRATA_TIERS", "{not json", "MEMSTRATA_"),
    ],
)
def test_bad_configuration_exits_2_without_traceback(
    cli_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
    reason: str,
) -> None:
    monkeypatch.setenv(name, value)
    code, _, err = run_cli(capsys, "stats")
    assert code == 2 and "invalid MEMSTRATA_* configuration" in err
    assert reason in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMSTRATA_DATABASE_URL", "mysql://memstrata:s3cret-pw@db/memory"),
        ("MEMSTRATA_SUMMARIZER_API_KEY", "s3cret-pw"),  # needs a URL too: a model error
    ],
)
def test_configuration_errors_never_echo_the_value(
    cli_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    if name == "MEMSTRATA_SUMMARIZER_API_KEY":
        monkeypatch.setenv("MEMSTRATA_SUMMARIZER_URL", "http://127.0.0.1:9/v1")
    code, out, err = run_cli(capsys, "stats")
    assert code == 2 and "s3cret-pw" not in err + out
    assert "MEMSTRATA_" in err and "errors.pydantic.dev" not in err


def test_serve_refuses_a_mismatched_store_with_one_clear_line(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from memory_core.storage.sqlite import SqliteSession, SqliteVectorIndex, open_database

    async def record_other_model() -> None:
        db = await open_database(cli_env)
        try:
            from memory_core.storage.sqlite import apply_migrations

            await apply_migrations(db)
            await SqliteVectorIndex(SqliteSession(db)).ensure_model("other-model", 384)
        finally:
            await db.close()

    asyncio.run(record_other_model())
    capsys.readouterr()
    code, out, err = run_cli(capsys, "serve")
    assert code == 1 and out == ""
    assert "memstrata: this database was indexed with other-model" in err
    assert "memstrata reindex" in err and "Traceback" not in err
