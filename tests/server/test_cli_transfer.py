"""export / import / backup through the CLI, and the transfer adapter under a live writer."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
import sqlean

from memory_core.domain.models import Layer
from server.cli.commands import main
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.fakes import FrozenClock


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")


def use_db(monkeypatch: pytest.MonkeyPatch, path: Path) -> Path:
    monkeypatch.setenv("MEMSTRATA_DB", str(path))
    return path


def settings_for(db: Path) -> Settings:
    return Settings(db=db, embedding_model="none", schedule=ScheduleSettings(enabled=False))


def seed(db: Path) -> None:
    """Rows in every layer, two projects, with access history and a compaction summary."""
    clock = FrozenClock()

    async def write() -> None:
        async with open_container(settings_for(db), clock) as c:
            m = c.memories
            for n in range(4):
                await m.append("alpha", Layer.WORKING, f"note {n}", session_id="s1")
            await m.append(
                "alpha",
                Layer.EPISODIC,
                "Shipped v2 — with ünïcode",
                metadata={"by": "ci"},
                author="Ada Lovelace",
            )
            await m.learn("alpha", "user.editor", "Helix")
            await m.append("alpha", Layer.PROCEDURAL, "Run tests first", key="before deploying")
            clock.advance(days=3)
            await m.recall("alpha", "user.editor")  # access_count, last_accessed, tier
            await m.compact("alpha", Layer.WORKING, keep_last=1, session_id="s1")
            await m.append("beta", Layer.EPISODIC, "Beta kickoff")
            clock.advance(days=40)
            await m.append("beta", Layer.SEMANTIC, "blue", key="beta.colour")
            from memory_core.services import maintenance

            await maintenance.recalculate_tiers(c.repo, c.clock, c.settings.tiers)

    asyncio.run(write())


def rows(path: Path) -> list[str]:
    """The memory lines of an export (the header carries the export time)."""
    return path.read_text(encoding="utf-8").splitlines()[1:]


def test_export_import_export_round_trip_is_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first_db = use_db(monkeypatch, tmp_path / "first.db")
    seed(first_db)
    code, _, err = run_cli(capsys, "export", str(tmp_path / "one.jsonl"))
    assert code == 0 and "exported 7 memories" in err

    header = json.loads((tmp_path / "one.jsonl").read_text().splitlines()[0])
    assert header["format"] == "memstrata-export" and header["format_version"] == 2
    assert header["schema_version"] >= 2 and header["project"] is None
    exported = [json.loads(line) for line in rows(tmp_path / "one.jsonl")]
    assert len(exported) == 7
    assert {
        "kind",
        "id",
        "project",
        "layer",
        "key",
        "content",
        "metadata",
        "session_id",
        "created_at",
        "updated_at",
        "last_accessed",
        "access_count",
        "memory_tier",
        "content_hash",
        "token_count",
    } == exported[0].keys()
    # `author` (migration 0008) is written only when set, so older readers see the same lines.
    shipped = next(r for r in exported if r["content"].startswith("Shipped"))
    assert shipped["author"] == "Ada Lovelace"
    assert sum("author" in r for r in exported) == 1
    editor = next(r for r in exported if r["key"] == "user.editor")
    assert editor["access_count"] == 1 and editor["last_accessed"] is not None
    assert {r["memory_tier"] for r in exported} >= {"ACTIVE", "EXPIRED"}
    assert any(r["metadata"].get("compacted_ids") for r in exported)

    use_db(monkeypatch, tmp_path / "second.db")
    code, out, _ = run_cli(capsys, "import", str(tmp_path / "one.jsonl"), "--json")
    assert code == 0
    assert json.loads(out) == {
        "imported": 7,
        "skipped": 0,
        "renumbered": 0,
        "redacted": {},
        "stores": {"memory": {"imported": 7, "skipped": 0, "renumbered": 0}},
    }
    code, _, _ = run_cli(capsys, "export", str(tmp_path / "two.jsonl"))
    assert code == 0
    assert rows(tmp_path / "two.jsonl") == rows(tmp_path / "one.jsonl")

    # The imported copy is a working store: keyword search, recall, and new ids after the old.
    code, out, _ = run_cli(capsys, "search", "ünïcode", "-p", "alpha", "--json")
    assert len(json.loads(out)["hits"]) == 1
    code, out, _ = run_cli(capsys, "recall", "beta.colour", "-p", "beta", "--json")
    assert code == 0 and json.loads(out)["value"] == "blue"

    async def append_one() -> int:
        async with open_container(settings_for(tmp_path / "second.db")) as c:
            result = await c.memories.append("alpha", Layer.EPISODIC, "after import")
            return result.outcome.memory.id

    assert asyncio.run(append_one()) > max(r["id"] for r in exported)


def test_import_into_a_non_empty_store_skips_known_memories_and_renumbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "source.db")
    seed(tmp_path / "source.db")
    run_cli(capsys, "export", str(tmp_path / "all.jsonl"))
    code, _, _ = run_cli(capsys, "export", str(tmp_path / "beta.jsonl"), "--project", "beta")
    assert code == 0 and len(rows(tmp_path / "beta.jsonl")) == 2

    target = tmp_path / "target.db"

    async def own_rows() -> None:
        async with open_container(settings_for(target)) as c:
            await c.memories.learn("alpha", "user.editor", "Helix")  # same identity as source
            for n in range(5):  # ids 2-6; the source's rows have ids 4-10
                await c.memories.append("gamma", Layer.EPISODIC, f"g{n}")

    asyncio.run(own_rows())
    use_db(monkeypatch, target)
    code, out, _ = run_cli(capsys, "import", str(tmp_path / "all.jsonl"), "--json")
    counts = json.loads(out)
    assert code == 0
    assert counts["imported"] == 6 and counts["skipped"] == 1
    assert counts["renumbered"] == 2  # ids 4 and 5 were taken by this store's own rows
    code, out, _ = run_cli(capsys, "import", str(tmp_path / "all.jsonl"), "--json")
    again = json.loads(out)
    assert (again["imported"], again["skipped"], again["renumbered"]) == (0, 7, 0)  # idempotent
    code, out, _ = run_cli(capsys, "stats", "--json")
    totals = {p["project"]: p["total"] for p in json.loads(out)["projects"]}
    assert totals == {"alpha": 5, "beta": 2, "gamma": 5}


def test_import_of_one_project_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "source.db")
    seed(tmp_path / "source.db")
    run_cli(capsys, "export", str(tmp_path / "all.jsonl"))
    use_db(monkeypatch, tmp_path / "target.db")
    code, out, _ = run_cli(
        capsys, "import", str(tmp_path / "all.jsonl"), "--project", "beta", "--json"
    )
    assert code == 0 and json.loads(out)["imported"] == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "line 3: is not JSON"),
        ('{"kind": "memory", "id": 9}', "line 3: project: Field required"),
        ('{"id": 9}', "line 3: kind: must be one of memory, memory_version, conversation_session"),
        ('{"kind": "scratchpad_snippet", "id": 9}', "line 3: session_id: is required"),
        ("LAYER", "line 3: layer:"),
        ("EMPTY", "line 3: content: must not be empty"),
        ("NOKEY", "line 3: key: is required in the semantic layer"),
    ],
)
def test_a_bad_line_is_refused_and_nothing_is_imported(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: str,
    reason: str,
) -> None:
    use_db(monkeypatch, tmp_path / "source.db")
    seed(tmp_path / "source.db")
    run_cli(capsys, "export", str(tmp_path / "all.jsonl"))
    lines = (tmp_path / "all.jsonl").read_text().splitlines()
    good = json.loads(lines[1])
    bad = {
        "LAYER": json.dumps({**good, "layer": "dreams"}),
        "EMPTY": json.dumps({**good, "content": "  "}),
        "NOKEY": json.dumps({**good, "layer": "semantic", "key": None}),
    }.get(line, line)
    (tmp_path / "bad.jsonl").write_text("\n".join([lines[0], lines[1], bad, *lines[2:]]) + "\n")

    use_db(monkeypatch, tmp_path / "target.db")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "bad.jsonl"))
    assert code == 1 and reason in err and "Traceback" not in err
    code, out, _ = run_cli(capsys, "stats", "--json")
    assert json.loads(out)["projects"][0]["total"] == 0


def test_import_refuses_other_formats_and_missing_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "target.db")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "nope.jsonl"))
    assert code == 3 and "no export file" in err
    newer = {
        "format": "memstrata-export",
        "format_version": 1,
        "schema_version": 9999,
        "exported_at": "2026-01-01T00:00:00Z",
    }
    (tmp_path / "newer.jsonl").write_text(json.dumps(newer) + "\n")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "newer.jsonl"))
    assert code == 1 and "upgrade memstrata first" in err
    (tmp_path / "v3.jsonl").write_text(json.dumps({**newer, "format_version": 3}) + "\n")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "v3.jsonl"))
    assert code == 1 and "format_version 3 is not supported" in err


def test_export_to_stdout_and_refusal_to_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "source.db")
    seed(tmp_path / "source.db")
    code, out, err = run_cli(capsys, "export", "-", "--project", "alpha")
    lines = out.splitlines()
    assert code == 0 and json.loads(lines[0])["project"] == "alpha"
    assert len(lines) == 1 + 5 and "to stdout" in err
    target = tmp_path / "x.jsonl"
    target.write_text("keep me")
    code, _, err = run_cli(capsys, "export", str(target))
    assert code == 5 and "--force" in err and target.read_text() == "keep me"
    code, out, _ = run_cli(capsys, "export", str(target), "--force", "--json")
    assert code == 0 and json.loads(out)["exported"] == 7


def test_backup_is_a_verified_copy_and_refuses_to_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = use_db(monkeypatch, tmp_path / "live.db")
    seed(db)
    copy = tmp_path / "backups" / "copy.db"
    code, out, _ = run_cli(capsys, "backup", str(copy), "--json")
    report = json.loads(out)
    assert code == 0 and report["integrity"] == "ok" and report["bytes"] > 0
    assert copy.stat().st_size == report["bytes"]

    code, _, err = run_cli(capsys, "backup", str(copy))
    assert code == 5 and "--force" in err
    code, _, err = run_cli(capsys, "backup", str(copy), "--force")
    assert code == 0 and "verified" in err
    code, _, _ = run_cli(capsys, "backup", str(db))
    assert code == 2

    use_db(monkeypatch, copy)
    code, out, _ = run_cli(capsys, "stats", "--json")
    assert {p["project"]: p["total"] for p in json.loads(out)["projects"]} == {
        "alpha": 5,
        "beta": 2,
    }
    use_db(monkeypatch, tmp_path / "missing.db")
    code, _, err = run_cli(capsys, "backup", str(tmp_path / "other.db"))
    assert code == 3 and "no database" in err


def test_backup_while_another_connection_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = use_db(monkeypatch, tmp_path / "busy.db")
    seed(db)
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        # A second process-like writer: its own connection, committing as fast as it can.
        conn = sqlean.connect(str(db), isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        n = 0
        while not stop.is_set():
            n += 1
            conn.execute(
                "INSERT INTO context_snapshots (project, layer, content, created_at, updated_at,"
                " content_hash) VALUES ('load', 'episodic', ?, '2026-01-01T00:00:00.000000Z',"
                " '2026-01-01T00:00:00.000000Z', ?)",
                (f"row {n}", f"hash {n}"),
            )
            written[0] = n
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while written[0] < 50:
            stop.wait(0.01)
        codes = []
        for i in range(3):
            code, _, _ = run_cli(capsys, "backup", str(tmp_path / f"b{i}.db"))
            codes.append(code)
    finally:
        stop.set()
        thread.join(10)
    assert codes == [0, 0, 0]
    counts = []
    for i in range(3):
        conn = sqlean.connect(str(tmp_path / f"b{i}.db"))
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts.append(
            conn.execute(
                "SELECT count(*) FROM context_snapshots WHERE project = 'load'"
            ).fetchone()[0]
        )
        conn.close()
    assert counts == sorted(counts) and counts[0] >= 50  # each copy a consistent snapshot
    assert written[0] >= counts[-1]


def test_export_never_writes_over_the_database_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    monkeypatch.setenv("MEMSTRATA_DB", str(db))
    assert run_cli(capsys, "migrate")[0] == 0
    before = db.read_bytes()
    code, _, err = run_cli(capsys, "export", str(db), "--force")
    assert code == 2 and "database's own files" in err
    assert db.read_bytes() == before
    target = tmp_path / "out.jsonl"
    assert run_cli(capsys, "export", str(target))[0] == 0
    assert target.read_text().startswith('{"format":"memstrata-export"')
    assert not list(tmp_path.glob(".*.partial"))


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("command", ["export", "backup"])
def test_the_database_side_files_are_refused_as_targets(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    side: str,
    command: str,
) -> None:
    db = use_db(monkeypatch, tmp_path / "m.db")
    assert run_cli(capsys, "migrate")[0] == 0
    target = Path(f"{db}{side}")
    before = target.read_bytes() if target.exists() else None
    code, _, err = run_cli(capsys, command, str(target), "--force")
    assert code == 2 and "database's own files" in err
    assert (target.read_bytes() if target.exists() else None) == before


@pytest.mark.parametrize("command", ["export", "backup"])
def test_a_planted_partial_link_is_never_written_through(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    db = use_db(monkeypatch, tmp_path / "m.db")
    seed(db)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "out.file"
    (tmp_path / f".{target.name}.partial").symlink_to(victim)  # the old predictable name
    assert run_cli(capsys, command, str(target))[0] == 0
    assert victim.read_text() == "precious"
    assert target.is_file() and not target.is_symlink()
    assert target.stat().st_mode & 0o077 == 0  # private: it holds every memory


def test_a_failed_export_leaves_no_partial_and_a_killed_ones_litter_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import time

    from server.cli import transfer as cli_transfer

    db = use_db(monkeypatch, tmp_path / "m.db")
    seed(db)
    target = tmp_path / "out.jsonl"
    killed = tmp_path / f".{target.name}.abc123.partial"  # what a SIGKILLed run leaves
    killed.write_text("half")
    hour_ago = time.time() - 3600
    os.utime(killed, (hour_ago, hour_ago))
    live = tmp_path / f".{target.name}.def456.partial"  # another run still writing
    live.write_text("busy")

    async def broken(*_: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(cli_transfer, "_export", broken)
    with pytest.raises(OSError, match="disk full"):
        main(["export", str(target)])
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.glob(".*.partial")) == [live.name]


def test_a_version_1_export_still_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "source.db")
    seed(tmp_path / "source.db")
    run_cli(capsys, "export", str(tmp_path / "v2.jsonl"))
    lines = (tmp_path / "v2.jsonl").read_text().splitlines()
    header = {**json.loads(lines[0]), "format_version": 1}
    # What memstrata wrote before format 2: the memory lines only, without `kind`.
    v1 = [json.dumps(header)]
    v1 += [
        json.dumps({k: v for k, v in json.loads(line).items() if k != "kind"})
        for line in lines[1:]
        if json.loads(line)["kind"] == "memory"
    ]
    (tmp_path / "v1.jsonl").write_text("\n".join(v1) + "\n")

    use_db(monkeypatch, tmp_path / "target.db")
    code, out, _ = run_cli(capsys, "import", str(tmp_path / "v1.jsonl"), "--json")
    assert code == 0 and json.loads(out)["imported"] == len(v1) - 1 == 7
    code, _, _ = run_cli(capsys, "export", str(tmp_path / "again.jsonl"))
    assert rows(tmp_path / "again.jsonl") == [
        line for line in lines[1:] if json.loads(line)["kind"] == "memory"
    ]


def test_a_batch_below_one_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_db(monkeypatch, tmp_path / "target.db")
    (tmp_path / "any.jsonl").write_text("")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "any.jsonl"), "--batch", "0")
    assert code == 2 and "--batch must be at least 1" in err
