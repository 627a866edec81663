"""A checkout's memories saved under its folder name move to its repository's name, when safe.

Before projects had identities, MEMSTRATA_PROJECT_SCOPE=git named a checkout after its
folder (`legacy_project`): `~/work/api` and `~/oss/api` shared `api`. After the upgrade the
checkout's project is `api@github.com/acme/api` and `api` is read by nobody. Its rows are
handed over only when the store proves they came from this project:

- every hook session of `api` recorded where it started (the session-start context's
  `- directory:` line), and every such directory still exists and is this project now
  (a clone or worktree of the same repository counts: under the new rule it shares it);
- `adopt_on_first_use` (for the session-start hook) moves only while the new name holds no
  rows, so a person's store is checked once per checkout, not at every session;
- otherwise nothing moves by itself: a directory of another repository (`~/oss/api`, or
  `victim!` beside `victim`), one that is gone, or a session that recorded none, means the
  rows may be someone else's, and `memstrata projects adopt --force` is the person's own
  decision, after `memstrata projects` listed the directories.

Rows the new name already holds by their identity stay under the old name (ProjectMoves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memory_core.ports.project_moves import ProjectMove, ProjectMoves
from server.project.scope import Scope, identity_of, legacy_project, project_for

__all__ = ["Adoption", "adopt", "adopt_on_first_use", "plan_adoption"]

Verdict = Literal["none", "safe", "shared", "unproven", "adopted"]


@dataclass(frozen=True)
class Adoption:
    """What the old folder-named project of a directory is, and what became of it.

    Attributes:
        project: The directory's project now.
        legacy: The name it had before identities (None under `fixed`, or the same name).
        verdict: "none" (no old project with rows), "safe" (every session of it started in
            this project), "shared" (some in another project, or in a directory that is
            gone), "unproven" (a session recorded no directory, or none was recorded),
            "adopted" (moved).
        directories: Where the old project's sessions started.
        foreign: Those that are not this project now (another repository, or gone).
        move: What the move did, once adopted.
    """

    project: str
    legacy: str | None
    verdict: Verdict
    directories: frozenset[str] = field(default_factory=frozenset)
    foreign: tuple[str, ...] = ()
    move: ProjectMove | None = None


async def plan_adoption(moves: ProjectMoves, scope: Scope, cwd: Path) -> Adoption:
    """What adopting the directory's old project would do (reads only)."""
    project, legacy = _names(scope, cwd)
    if legacy is None or legacy == project or not await moves.holds_rows(legacy):
        return Adoption(project=project, legacy=None, verdict="none")
    started = await moves.start_directories(legacy)
    foreign = tuple(sorted(d for d in started.directories if not _is_ours(d, scope, project)))
    verdict: Verdict = "safe"
    if foreign:
        verdict = "shared"
    elif started.sessions == 0 or started.unnamed:
        verdict = "unproven"
    return Adoption(project, legacy, verdict, started.directories, foreign)


def _names(scope: Scope, cwd: Path) -> tuple[str, str | None]:
    """The directory's project now and before (a few stat calls and one small file read)."""
    if scope == "fixed":
        return "", None
    try:
        where = cwd.expanduser().resolve()
    except (OSError, RuntimeError):
        return "", None
    return identity_of(scope, where).name, legacy_project(where)


def _is_ours(directory: str, scope: Scope, project: str) -> bool:
    """True when `directory` exists and is `project` under today's rule."""
    path = Path(directory)
    if not path.is_absolute() or not path.is_dir():
        return False  # gone (or never a directory): its memories cannot be placed
    return project_for("", scope, path) == project


async def adopt(moves: ProjectMoves, scope: Scope, cwd: Path, *, force: bool = False) -> Adoption:
    """Move the directory's old project to its name when safe (or when forced)."""
    plan = await plan_adoption(moves, scope, cwd)
    if plan.legacy is None or (plan.verdict != "safe" and not force):
        return plan
    done = await moves.move(plan.legacy, plan.project)
    return Adoption(plan.project, plan.legacy, "adopted", plan.directories, plan.foreign, done)


async def adopt_on_first_use(moves: ProjectMoves, scope: Scope, cwd: Path) -> Adoption | None:
    """`adopt` without force, only while the directory's project holds no rows yet.

    For the session-start hook: one indexed lookup once the project is in use.
    """
    if scope == "fixed":
        return None
    try:
        project = project_for("", scope, cwd)
    except OSError:
        return None
    if not project or await moves.holds_rows(project):
        return None
    return await adopt(moves, scope, cwd)
