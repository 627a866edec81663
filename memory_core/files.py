"""Files memstrata writes for a person (exports, backups): never through a link, never litter.

A file is first written under a fresh private name beside its target and moved into place
only when complete, so a failed run never costs the file it was to replace:
- the temporary file is created with O_CREAT | O_EXCL and mode 0600 (tempfile.mkstemp), so a
  symbolic link planted at a predictable name cannot redirect the write to another file;
- it is removed when the run fails or is interrupted; a run that was killed outright leaves
  it behind, and the next run to the same target removes such leftovers once they have not
  been written for a minute (a live run writes continuously);
- the store's own files (the database, its -wal, -shm and -journal) are refused as targets.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["STALE_AFTER_SECONDS", "is_database_file", "partial_beside"]

STALE_AFTER_SECONDS = 60.0

_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def is_database_file(path: Path, db: Path) -> bool:
    """Whether `path` is the SQLite database `db` or one of its side files."""
    target = path.resolve()
    return any(target == Path(f"{db.resolve()}{suffix}") for suffix in _SIDE_FILES)


def _remove_stale(target: Path) -> None:
    """Remove leftovers of killed runs to `target` (regular files of ours, idle a minute)."""
    now = time.time()
    patterns = (f".{target.name}.*.partial", f".{target.name}.partial")
    for pattern in patterns:
        for leftover in target.parent.glob(pattern):
            with suppress(OSError):
                info = leftover.lstat()
                if (
                    leftover.is_file()
                    and not leftover.is_symlink()
                    and info.st_uid == os.getuid()
                    and now - info.st_mtime > STALE_AFTER_SECONDS
                ):
                    leftover.unlink()


@contextmanager
def partial_beside(target: Path) -> Iterator[tuple[int, Path]]:
    """A new private file beside `target`: (open descriptor, path); removed on failure.

    The caller writes through the descriptor (or reopens the path it alone knows), closes it
    and moves the path onto `target` with os.replace before leaving the block.
    """
    _remove_stale(target)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    path = Path(name)
    try:
        yield fd, path
    except BaseException:
        with suppress(OSError):
            os.close(fd)
        path.unlink(missing_ok=True)
        raise
