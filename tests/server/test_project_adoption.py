"""Upgrading: memories saved under a checkout's folder name stay its own, and only its own.

Each test builds the store an earlier version left (rows under the folder name, hook sessions
whose start context names the directory they started in, as the session-start hook saved
them), then runs the adoption on both backends.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memory_core.clock import SystemClock
from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Layer
from memory_core.services.memories import MemoryService
from memory_core.services.session_start import ScreenContext, SessionStartService
from server.cli.projects import run_command
from server.project.adoption import adopt, adopt_on_first_use, plan_adoption
from server.project.scope import project_for
from server.settings import Settings
from tests.backends import StorageUnderTest
from tests.fakes import START
from tests.storage.test_project_moves import moves_on
from tests.unit.test_project_scope import checkout


async def _old_sessions(storage: StorageUnderTest, legacy: str, *started_in: Path) -> None:
    """Hook sessions of `legacy` as the session-start hook saved them, one per directory."""
    builder = SessionStartService(repo=storage.repo(), clock=SystemClock(), tiers=TierPolicy())
    for n, where in enumerate(started_in):
        built = await builder.build(legacy, screen=ScreenContext(cwd=str(where)))
        await storage.hook_sessions().save_start(legacy, f"old-{n}", built.text, 1, START)


async def test_a_checkout_alone_under_its_folder_name_gets_its_memories_at_first_use(
    storage: StorageUnderTest, service: MemoryService, tmp_path: Path
) -> None:
    api = checkout(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    (api / "src").mkdir()
    await service.learn("api", "deploy.target", "fly.io")
    await _old_sessions(storage, "api", api, api / "src")
    moves = moves_on(storage)

    done = await adopt_on_first_use(moves, "git", api)

    assert done is not None and done.verdict == "adopted" and done.legacy == "api"
    assert done.move is not None and done.move.memories == 1
    assert done.project == "api@github.com/acme/api"
    fact = await service.recall("api@github.com/acme/api", "deploy.target")
    assert fact.value is not None and fact.value.content == "fly.io"
    assert await adopt_on_first_use(moves, "git", api) is None, "in use: one lookup, no scan"


async def test_two_clones_of_one_remote_under_one_folder_name_are_one_project(
    storage: StorageUnderTest, service: MemoryService, tmp_path: Path
) -> None:
    work = checkout(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    oss = checkout(tmp_path / "oss" / "api", "https://github.com/acme/api.git")
    await service.append("api", Layer.EPISODIC, "Webhooks retry three times")
    await _old_sessions(storage, "api", work, oss)
    plan = await plan_adoption(moves_on(storage), "git", oss)
    assert plan.verdict == "safe" and plan.directories == {str(work), str(oss)}


@pytest.mark.parametrize("other", ["victim!", "elsewhere/victim"])
async def test_two_checkouts_that_collided_get_nothing_silently(
    storage: StorageUnderTest, service: MemoryService, tmp_path: Path, other: str
) -> None:
    victim = checkout(tmp_path / "victim")
    attacker = checkout(tmp_path / other)
    await service.learn("victim", "deploy.target", "poisoned by the other checkout")
    await _old_sessions(storage, "victim", victim, attacker)
    moves = moves_on(storage)

    for where in (victim, attacker):
        assert await adopt_on_first_use(moves, "git", where) is not None
        refused = await adopt(moves, "git", where)
        assert refused.verdict == "shared" and refused.move is None
        assert refused.foreign == (str(attacker if where == victim else victim),)
    assert (await service.recall("victim", "deploy.target")).value is not None

    forced = await adopt(moves, "git", victim, force=True)
    assert forced.verdict == "adopted"
    moved = await service.recall(project_for("", "git", victim), "deploy.target")
    assert moved.value is not None


async def test_a_directory_that_is_gone_or_unrecorded_proves_nothing(
    storage: StorageUnderTest, service: MemoryService, tmp_path: Path
) -> None:
    api = checkout(tmp_path / "api")
    gone = checkout(tmp_path / "old" / "api")
    await service.append("api", Layer.EPISODIC, "Some memory")
    await _old_sessions(storage, "api", api, gone)
    shutil.rmtree(gone)
    moves = moves_on(storage)
    plan = await plan_adoption(moves, "git", api)
    assert plan.verdict == "shared" and plan.foreign == (str(gone),)

    await service.append("notes", Layer.EPISODIC, "Written by the server, no hook session")
    notes = checkout(tmp_path / "notes")
    assert (await plan_adoption(moves, "git", notes)).verdict == "unproven"
    assert (await adopt_on_first_use(moves, "git", notes)) is not None
    assert await moves.holds_rows("notes")


async def test_nothing_to_adopt_under_fixed_scope_or_without_old_rows(
    storage: StorageUnderTest, tmp_path: Path
) -> None:
    api = checkout(tmp_path / "api")
    moves = moves_on(storage)
    assert (await plan_adoption(moves, "git", api)).verdict == "none"
    assert (await plan_adoption(moves, "fixed", api)).verdict == "none"
    assert await adopt_on_first_use(moves, "fixed", api) is None


def _answer(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The command's JSON line (structlog, unconfigured in tests, prints its lines first)."""
    return dict(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))


def _cli(settings: Settings, where: Path, action: str, *, force: bool = False) -> int:
    args = argparse.Namespace(action=action, force=force, json=True)
    return run_command(settings, args, where)


async def _seed_file(db: Path, victim: Path, bang: Path) -> None:
    from server.backends import open_backend

    settings = Settings(db=db, embedding_model="none")
    async with open_backend(settings) as backend:
        service = MemoryService(
            repo=backend.repo,
            clock=SystemClock(),
            limits=settings.limits,
            tiers=settings.tiers,
            ranking=settings.ranking,
        )
        await service.learn("victim", "deploy.target", "fly.io")
        builder = SessionStartService(repo=backend.repo, clock=SystemClock(), tiers=TierPolicy())
        for n, where in enumerate((victim, bang)):
            built = await builder.build("victim", screen=ScreenContext(cwd=str(where)))
            await backend.hook_sessions.save_start("victim", f"s{n}", built.text, 1, START)


def test_the_cli_shows_refuses_and_forces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    monkeypatch.delenv("MEMSTRATA_PROJECT_SCOPE", raising=False)
    victim, bang = checkout(tmp_path / "victim"), checkout(tmp_path / "victim!")
    db = tmp_path / "memory.db"
    asyncio.run(_seed_file(db, victim, bang))
    settings = Settings(db=db, embedding_model="none")

    assert _cli(settings, victim, "show") == 0
    shown = _answer(capsys)
    assert (shown["legacy"], shown["verdict"], shown["foreign"]) == (
        "victim",
        "shared",
        [str(bang)],
    )
    assert shown["display"] == "victim" and shown["scope"] == "git"
    assert _cli(settings, victim, "adopt") == 1
    assert _answer(capsys)["moved"] is None
    assert _cli(settings, victim, "adopt", force=True) == 0
    forced = _answer(capsys)
    assert forced["verdict"] == "adopted" and forced["moved"]["memories"] == 1
    assert _cli(settings, bang, "show") == 0
    assert _answer(capsys)["verdict"] == "none"

    text = argparse.Namespace(action="show", force=False, json=False)
    assert run_command(settings, text, tmp_path / "nowhere-yet") == 0
    assert "no memories under an older folder-named project" in capsys.readouterr().out
