"""`memstrata search` and `recall` in a git checkout use the project Claude Code's hooks use there.

The plugin and `setup claude-code` run the server and the hooks with
MEMSTRATA_PROJECT_SCOPE=git; a person's terminal has no such variable, yet `memstrata search`
in the same checkout must look where those stored, and say which project it searched.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memory_core.domain.models import Layer
from server.cli.memory import cli_project
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.server.test_cli_setup import run_cli


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout `api` with a subdirectory; the database outside it; no project variables."""
    repo = tmp_path / "work" / "api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("MEMSTRATA_PROJECT", "MEMSTRATA_PROJECT_SCOPE"):
        monkeypatch.delenv(name, raising=False)
    return repo


def store_as_the_hooks_do(db: Path, cwd: Path, content: str, key: str | None = None) -> str:
    """Store content in the project Claude Code's server would use in cwd; returns it."""
    settings = Settings(
        db=db,
        embedding_model="none",
        project_scope="git",
        schedule=ScheduleSettings(enabled=False),
    )
    project = settings.default_project(cwd)

    async def write() -> None:
        async with open_container(settings) as c:
            if key is None:
                await c.memories.append(project, Layer.EPISODIC, content)
            else:
                await c.memories.learn(project, key, content)

    asyncio.run(write())
    return project


def test_search_in_a_checkout_finds_what_the_hooks_stored_and_names_the_project(
    capsys: pytest.CaptureFixture[str],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = store_as_the_hooks_do(tmp_path / "memory.db", checkout, "Payment webhook retries")
    capsys.readouterr()
    monkeypatch.chdir(checkout / "src")
    code, out, _ = run_cli(capsys, "search", "webhook", "--mode", "keyword")
    assert code == 0
    assert f"1 hit(s) for 'webhook' in project {project} (keyword)" in out
    assert "Payment webhook retries" in out

    code, out, _ = run_cli(capsys, "search", "invoices", "--mode", "keyword")
    assert code == 0
    assert out.startswith(f"0 hits for 'invoices' in project {project} (keyword)\n")

    code, out, _ = run_cli(capsys, "search", "webhook", "--mode", "keyword", "--json")
    assert len(json.loads(out)["hits"]) == 1


def test_recall_in_a_checkout_uses_its_project_too(
    capsys: pytest.CaptureFixture[str],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = store_as_the_hooks_do(tmp_path / "memory.db", checkout, "Helix", key="user.editor")
    capsys.readouterr()
    monkeypatch.chdir(checkout)
    code, out, _ = run_cli(capsys, "recall", "user.editor")
    assert code == 0 and "Helix" in out
    code, out, _ = run_cli(capsys, "recall", "user.shell")
    assert code == 3
    assert f"(project {project})" in out


def test_an_explicit_project_or_scope_and_a_directory_outside_git_keep_their_meaning(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_git = Settings().default_project(checkout)
    assert in_git == "default", "the server's own default is unchanged"
    assert cli_project(Settings(), None, checkout) == Settings(project_scope="git").default_project(
        checkout
    )
    assert cli_project(Settings(), "named", checkout) == "named"
    outside = tmp_path / "notes"
    outside.mkdir()
    assert cli_project(Settings(), None, outside) == "default"
    monkeypatch.setenv("MEMSTRATA_PROJECT", "work")
    assert cli_project(Settings(), None, checkout) == "work"
    monkeypatch.delenv("MEMSTRATA_PROJECT")
    monkeypatch.setenv("MEMSTRATA_PROJECT_SCOPE", "fixed")
    assert cli_project(Settings(), None, checkout) == "default"


def test_bracketed_text_in_a_memory_prints_as_written(
    capsys: pytest.CaptureFixture[str],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rich would read `[rt1]` as a markup tag and print `CALL:` (issue 35, N14)."""
    text = "Retry CALL[rt1]: then [bold]x[/bold] and [link=https://a.example]y[/link]"
    store_as_the_hooks_do(tmp_path / "memory.db", checkout, text)
    capsys.readouterr()
    monkeypatch.chdir(checkout)
    code, out, _ = run_cli(capsys, "search", "retry call", "--mode", "keyword")
    assert code == 0
    assert text in out


def test_the_search_table_shows_the_match_strength_the_tools_show(
    capsys: pytest.CaptureFixture[str],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35, N6: the same absolute strength in the CLI as in the tools (not only a score)."""
    store_as_the_hooks_do(tmp_path / "memory.db", checkout, "Payment webhook retries")
    capsys.readouterr()
    monkeypatch.chdir(checkout)
    code, out, _ = run_cli(capsys, "search", "payment webhook retries", "--mode", "keyword")
    code_json, raw, _ = run_cli(
        capsys, "search", "payment webhook retries", "--mode", "keyword", "--json"
    )
    assert code == code_json == 0
    header = next(line for line in out.splitlines() if " id " in line or "┃ id" in line)
    assert "match" in header
    strength = json.loads(raw)["hits"][0]["match"]
    row = next(line for line in out.splitlines() if "Payment webhook retries" in line)
    assert f" {strength} " in row
