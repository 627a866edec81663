"""What killed exports and backups leave behind, found and removed (issue 34.7).

An export or backup writes `.NAME.<random>.partial` beside its target and renames it into
place at the end (memory_core.files). A run killed outright (SIGKILL, a power cut) leaves
that file, and a backup killed while it checked its copy also leaves the copy's SQLite side
files, `.NAME.<random>.partial-wal` and `-shm` (`-journal` under another journal mode).
A group of them (a partial and its side files) is stale once none of its files has been
written for a minute: a live run writes continuously. The next run to the same target
removes its target's stale groups (`remove_stale`); `memstrata doctor` names any left in
the places it knows (`find_partials`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from memory_core.files import STALE_AFTER_SECONDS

__all__ = ["SIDE_SUFFIXES", "find_partials", "remove_stale"]

# A partial's SQLite side files, as SQLite names them.
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
# What follows `.NAME.`: tempfile.mkstemp's 8 random characters and `.partial` (or, from
# older versions, `partial` alone), with an optional side-file suffix.
_TAIL = re.compile(r"(?:[a-z0-9_]{8}\.)?partial(?:-wal|-shm|-journal)?\Z")
_ANY = re.compile(r"\..+\.(?:[a-z0-9_]{8}\.)?partial(?:-wal|-shm|-journal)?\Z")


def _ours(path: Path) -> os.stat_result | None:
    """The file's status when it is a regular file (not a link) of this user; else None."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not path.is_file() or path.is_symlink() or info.st_uid != os.getuid():
        return None
    return info


def _base(path: Path) -> Path:
    """The partial a side file belongs to (a partial is its own)."""
    for suffix in SIDE_SUFFIXES:
        if path.name.endswith(".partial" + suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def _groups(paths: Iterable[Path]) -> dict[Path, list[tuple[Path, float]]]:
    """Partials with their side files: {partial: [(file, mtime), ...]}, files of ours only."""
    groups: dict[Path, list[tuple[Path, float]]] = {}
    for path in paths:
        info = _ours(path)
        if info is not None:
            groups.setdefault(_base(path), []).append((path, info.st_mtime))
    return groups


def find_partials(
    directory: Path, name: str | None = None, *, stale_after: float = STALE_AFTER_SECONDS
) -> list[Path]:
    """The stale leftovers in `directory` (of the target `name`, or of any), side files too.

    Sorted by path. A group with a file written in the last `stale_after` seconds belongs
    to a run still going and is left out.
    """
    prefix = f".{name}." if name is not None else None
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    if prefix is None:
        found = [directory / n for n in names if _ANY.match(n)]
    else:
        found = [
            directory / n for n in names if n.startswith(prefix) and _TAIL.match(n[len(prefix) :])
        ]
    now = time.time()
    stale: list[Path] = []
    for files in _groups(found).values():
        if all(now - mtime > stale_after for _, mtime in files):
            stale.extend(path for path, _ in files)
    return sorted(stale)


def remove_stale(target: Path, *, stale_after: float = STALE_AFTER_SECONDS) -> list[Path]:
    """Remove the stale leftovers of earlier runs to `target`; returns what was removed."""
    removed: list[Path] = []
    for path in find_partials(target.parent, target.name, stale_after=stale_after):
        with suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed
