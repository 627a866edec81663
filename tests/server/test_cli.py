"""The memstrata CLI in-process: exit codes, tables, --json shapes, doctor."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

import pytest

from memory_core.domain.models import Layer
from memory_core.storage.sqlite import SqliteSession, SqliteVectorIndex, open_database
from server.cli import commands
from server.cli.commands import main
from server.container import open_container
from server.settings import ScheduleSettings, Settings

Run = tuple[int, str, str]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    # What came before (a seed's logs, when no test has configured logging yet) is not the
    # command's output.
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(path))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("COLUMNS", "160")  # rich tables: wide enough to keep rows on one line
    return path


def seed(db: Path) -> None:
    settings = Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))

    async def write() -> None:
        async with open_container(settings) as c:
            m = c.memories
            await m.append("alpha", Layer.EPISODIC, "Deployed billing to staging on Friday")
            await m.append("alpha", Layer.WORKING, "scratch idea", session_id="s1")
            await m.learn("alpha", "user.editor", "Helix")
            await m.append(
                "alpha", Layer.PROCEDURAL, "Run the migration dry-run first", key="deploying"
            )
            await m.append("beta", Layer.EPISODIC, "Beta kickoff meeting notes")

    asyncio.run(write())


def test_help_documents_commands_examples_and_exit_codes(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    for command in ("serve", "stats", "search", "recall", "export", "import", "backup", "doctor"):
        assert command in out
    assert "exit codes:" in out and "130" in out
    for command in ("stats", "search", "recall", "export", "import", "backup", "doctor"):
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0, command
        assert "examples:" in out and f"memstrata {command}" in out, command
        assert "exit codes:" in out, command


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_a_command_is_parsed_without_the_other_commands_modules() -> None:
    """The parser builds other modules' commands only to list them all (or for a bad word),
    and each command's own parser (its help, its options) is the same either way."""
    full = _commands(commands._parser())
    lean_ones = commands._OWN_COMMANDS.union(*(c for _, c in commands._PARSER_MODULES))
    assert set(full) == lean_ones  # the tables name every command
    for name, parser in full.items():
        assert commands._command_word([name, "--json"]) == name
        lean = _commands(commands._parser(name))
        assert lean[name].format_help() == parser.format_help(), name
        if name in commands._OWN_COMMANDS:
            assert set(lean) == commands._OWN_COMMANDS, name
    assert commands._command_word(["--help"]) is None  # the listing: every command
    assert commands._command_word(["-v", "no-such-command"]) is None  # argparse lists them
    assert commands._command_word([]) == "serve"


def test_bad_arguments_exit_2(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "search")
    assert code == 2 and "query" in err
    code, _, err = run_cli(capsys, "search", "x", "--mode", "psychic")
    assert code == 2 and "invalid choice" in err


def test_stats_lists_every_project_in_a_table_and_as_json(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(db)
    capsys.readouterr()  # the seeding's logs
    code, out, _ = run_cli(capsys, "stats")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"memstrata: {db} (") and lines[0].endswith(" bytes)")
    # A plain aligned table (server/cli/stats_output.py): cells are 2+ spaces apart.
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[1:4])}
    assert set(rows) == {"alpha", "beta", "project"}
    alpha = dict(zip(rows["project"], rows["alpha"], strict=True))
    assert alpha["total"] == "4" and alpha["ACTIVE"] == "4"
    assert alpha["episodic"] == "1" and alpha["semantic"] == "1" and alpha["procedural"] == "1"
    assert "project beta: 1 memories" in out
    assert alpha["never read"] == "4" and "1 never read" in out  # nothing was read yet

    code, out, _ = run_cli(capsys, "stats", "--json")
    report = json.loads(out)
    assert code == 0 and report["database"] == str(db)
    by_name = {p["project"]: p for p in report["projects"]}
    assert set(by_name) == {"alpha", "beta"}
    assert by_name["alpha"]["total"] == 4 and by_name["alpha"]["by_layer"]["working"] == 1
    assert by_name["beta"]["by_tier"]["ACTIVE"] == 1 and by_name["beta"]["never_accessed"] == 1

    code, out, _ = run_cli(capsys, "stats", "--project", "beta", "--json")
    assert [p["project"] for p in json.loads(out)["projects"]] == ["beta"]


def test_search_prints_a_table_and_the_tool_shape_as_json(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(db)
    code, out, _ = run_cli(capsys, "search", "billing staging", "-p", "alpha")
    assert code == 0
    assert "Deployed billing to staging on Friday" in out and "episodic" in out
    assert "keyword" in out  # no model configured: the note says keyword search was used

    code, out, _ = run_cli(
        capsys, "search", "billing", "--project", "alpha", "--mode", "keyword", "--json"
    )
    found = json.loads(out)
    assert code == 0 and len(found["hits"]) == 1 and found["mode"] == "keyword"
    hit = found["hits"][0]
    assert hit["content"] == "Deployed billing to staging on Friday"
    assert {"id", "layer", "tier", "score", "signals"} <= hit.keys()

    code, out, _ = run_cli(capsys, "search", "billing", "--project", "beta", "--json")
    assert code == 0 and json.loads(out)["hits"] == []  # projects never leak


def test_recall_found_missing_and_rules(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db)
    code, out, _ = run_cli(capsys, "recall", "user.editor", "-p", "alpha")
    assert code == 0 and "Helix" in out
    code, out, _ = run_cli(capsys, "recall", "user.editor", "-p", "alpha", "--json")
    recalled = json.loads(out)
    assert recalled["found"] is True and recalled["value"] == "Helix"
    assert recalled["memory"]["access_count"] == 2  # handed out twice, as the tool would

    code, out, _ = run_cli(capsys, "recall", "user.shell", "-p", "alpha", "--json")
    assert code == 3 and json.loads(out)["found"] is False
    code, out, _ = run_cli(capsys, "recall", "deploying", "-p", "alpha")
    assert code == 3  # no fact, although a rule applies: the rule is printed
    assert "Run the migration dry-run first" in out


def test_invalid_project_is_exit_1_without_traceback(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "search", "x", "--project", "bad name")
    assert code == 1 and "memstrata: project: must be" in err and "Traceback" not in err


def test_maintain_prints_text_or_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db)
    code, out, _ = run_cli(capsys, "maintain", "--recalculate", "--prune")
    assert code == 0
    assert "tiers recalculated: 0" in out and "pruned: 0" in out
    code, out, _ = run_cli(capsys, "maintain", "--prune", "--dry-run", "--json")
    assert code == 0 and json.loads(out) == {"would_prune": 0, "ids": []}


def test_doctor_passes_on_a_healthy_setup(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db)
    code, out, _ = run_cli(capsys, "doctor", "--json")
    report = json.loads(out)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert code == 0 and report["ok"] is True, report
    for name in ("sqlite driver", "extension loading", "sqlite-vec", "FTS5", "database path"):
        assert statuses[name] == "ok", name
    assert statuses["schema version"] == "ok" and statuses["integrity"] == "ok"
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 0 and "all checks passed" in out and "sqlite-vec" in out


def test_doctor_warns_about_a_project_over_or_near_the_storage_cap(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33.4: the cap's health findings reach doctor (alpha holds 4, beta 1)."""
    seed(db)
    monkeypatch.setenv("MEMSTRATA_PRESSURE__MAX_MEMORIES", "3")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0  # a warning, not a failure
    assert checks["storage cap (alpha)"]["status"] == "warn"
    assert "over the cap of 3" in checks["storage cap (alpha)"]["detail"]
    assert "storage cap (beta)" not in checks
    monkeypatch.setenv("MEMSTRATA_PRESSURE__MAX_MEMORIES", "100")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["storage cap"]["status"] == "ok"
    monkeypatch.delenv("MEMSTRATA_PRESSURE__MAX_MEMORIES")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    assert not [c for c in json.loads(out)["checks"] if c["name"].startswith("storage cap")]


def test_doctor_checks_the_default_model_files(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMSTRATA_EMBEDDING_MODEL")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0
    assert checks["embedding model"]["status"] == "ok"
    assert "sha256 ok" in checks["embedding model"]["detail"]
    assert checks["tokenizer"]["status"] == "ok"


def test_doctor_reports_a_broken_database_path_with_its_fix(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    monkeypatch.setenv("MEMSTRATA_DB", str(blocker / "memory.db"))
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 4
    assert "fail database path -> fix: set MEMSTRATA_DB to a file in a directory" in out
    assert "problems found" in out
    code, out, _ = run_cli(capsys, "doctor", "--json")
    path_check = next(c for c in json.loads(out)["checks"] if c["name"] == "database path")
    assert code == 4 and path_check["status"] == "fail"
    assert "is not a directory" in path_check["detail"] and path_check["fix"]


def test_doctor_reports_a_model_mismatch_and_newer_schema(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(db)

    async def tamper() -> None:
        conn = await open_database(db)
        try:
            await SqliteVectorIndex(SqliteSession(conn)).ensure_model("other-model", 8)
            await conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 'x')")
            await conn.commit()
        finally:
            await conn.close()

    asyncio.run(tamper())
    monkeypatch.delenv("MEMSTRATA_EMBEDDING_MODEL")
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 4
    assert checks["indexed model"]["status"] == "fail"
    assert "memstrata reindex" in checks["indexed model"]["fix"]
    assert checks["schema version"]["status"] == "fail"
    assert "upgrade memstrata" in checks["schema version"]["fix"]


def test_doctor_warns_about_pending_migrations(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def old_store() -> None:
        conn = await open_database(db)
        try:
            await conn.execute(
                "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
            )
            await conn.commit()
        finally:
            await conn.close()

    asyncio.run(old_store())
    code, out, _ = run_cli(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0  # a warning, not a failure: any command applies them
    assert checks["schema version"]["status"] == "warn"
    assert checks["schema version"]["fix"].startswith("memstrata migrate")


def test_serve_never_loads_the_cli_output_modules() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, server.cli.commands, server.app; "
        "print(sorted(m for m in sys.modules"
        " if m.startswith('server.cli.') and m != 'server.cli.commands'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_ingest_a_folder_then_again_is_a_no_op(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    (docs / "team").mkdir(parents=True)
    (docs / "handbook.md").write_text("# Deploys\n\nWe deploy on Tuesdays.\n\nNever on Fridays.\n")
    (docs / "team" / "oncall.txt").write_text("The on-call rota changes every Monday.\n")
    (docs / "image.png").write_bytes(b"\x89PNG")  # not a text suffix: not read
    code, out, _ = run_cli(capsys, "ingest", str(docs), "--tenant", "acme", "--json")
    report = json.loads(out)
    assert code == 0 and report["files"] == 2 and report["created"] == 2
    assert report["chunks"] >= 2 and report["skipped"] == []
    code, out, _ = run_cli(capsys, "ingest", str(docs), "--tenant", "acme", "--json")
    assert code == 0 and json.loads(out)["unchanged"] == 2
    (docs / "handbook.md").write_text("# Deploys\n\nWe deploy on Wednesdays now.\n")
    code, out, _ = run_cli(capsys, "ingest", str(docs), "--tenant", "acme")
    assert code == 0 and "1 replaced, 1 unchanged" in out
    code, _, err = run_cli(capsys, "ingest", str(tmp_path / "nope"), "--tenant", "acme")
    assert code == 3 and "no such file" in err
    code, _, err = run_cli(capsys, "ingest", str(docs), "--tenant", "bad tenant!")
    assert code == 1 and "tenant" in err


def test_ingest_lists_links_below_the_folder_and_never_follows_them(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = tmp_path / "home" / ".aws"
    secrets.mkdir(parents=True)
    (secrets / "credentials.md").write_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n")
    docs = tmp_path / "checkout"
    docs.mkdir()
    (docs / "readme.md").write_text("# Shop\n\nThe checkout flow lives in cart/.\n")
    (docs / "notes.md").symlink_to(secrets / "credentials.md")
    (docs / "aws").symlink_to(secrets, target_is_directory=True)
    code, out, _ = run_cli(capsys, "ingest", str(docs), "--tenant", "acme", "--json")
    report = json.loads(out)
    assert code == 0 and report["files"] == 1
    assert sorted((s["path"], s["reason"]) for s in report["skipped"]) == [
        ("aws", "symbolic link, not followed"),
        ("notes.md", "symbolic link, not followed"),
    ]


def test_knowledge_can_be_listed_and_deleted_from_the_cli(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))

    async def write() -> None:
        async with open_container(settings) as c:
            k = c.knowledge
            await k.preferences.update("ann", "units", "metric")
            await k.preferences.update("ann", "tone", "formal")
            await k.business.ingest("acme", "a.md", "Refunds within 30 days.")
            await k.scratchpad.write("s1", "a note", user="ann")

    asyncio.run(write())
    capsys.readouterr()  # the seeding's own log lines
    code, out, _ = run_cli(capsys, "preferences", "list", "--user", "ann", "--json")
    assert code == 0 and [r["key"] for r in json.loads(out)["rules"]] == ["tone", "units"]
    code, out, _ = run_cli(capsys, "preferences", "delete", "--user", "ann", "--key", "units")
    assert code == 0 and '"units"' in out
    code, _, err = run_cli(capsys, "preferences", "delete", "--user", "ann", "--all")
    assert code == 2 and "--yes" in err  # everything needs --yes
    code, out, _ = run_cli(capsys, "preferences", "delete", "--user", "ann", "--all", "--yes")
    assert code == 0 and json.loads(out)["deleted_keys"] == ["tone"]
    code, out, _ = run_cli(capsys, "documents", "list", "--tenant", "acme", "--json")
    assert [d["source"] for d in json.loads(out)["documents"]] == ["a.md"]
    code, out, _ = run_cli(
        capsys, "documents", "delete", "--tenant", "acme", "--source", "a.md", "--json"
    )
    assert code == 0 and json.loads(out)["deleted"] == ["a.md"]
    code, out, _ = run_cli(capsys, "scratchpad", "delete", "--user", "ann", "--yes", "--json")
    assert code == 0 and len(json.loads(out)["deleted"]) == 1
    code, out, _ = run_cli(capsys, "scratchpad", "list", "--session", "s1", "--json")
    assert json.loads(out)["snippets"] == []


@pytest.mark.parametrize("command", ["doctor", "backup"])
def test_sqlite_file_commands_refuse_a_postgres_store(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    monkeypatch.setenv("MEMSTRATA_DATABASE_URL", "postgresql://me:s3cret@db.example/memory")
    argv = [command] if command == "doctor" else [command, str(db.with_suffix(".out"))]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert "PostgreSQL" in err and "copy-store" in err and "s3cret" not in err


def test_store_location_hides_the_password(tmp_path: Path) -> None:
    on_pg = Settings(db=tmp_path / "m.db", database_url="postgresql://me:s3cret@h:5432/m")
    assert on_pg.store_location == "postgresql://me:***@h:5432/m"
    assert Settings(db=tmp_path / "m.db").store_location == str(tmp_path / "m.db")
