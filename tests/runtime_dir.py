"""A short private XDG_RUNTIME_DIR for the tests of the warm hook socket."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["short_runtime_dir"]


@contextmanager
def short_runtime_dir() -> Iterator[Path]:
    """A fresh directory of ours under /tmp, removed afterwards.

    pytest's tmp_path is too deep for a Unix socket's path (at most ~100 bytes).
    """
    path = Path(tempfile.mkdtemp(prefix="msrt"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
