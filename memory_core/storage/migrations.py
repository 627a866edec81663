"""The numbered SQL migration files both backends apply: finding, naming and ordering them.

Applying them is each backend's own (its driver, its transaction and locking rules); reading
them is shared, so a PostgreSQL store never imports the SQLite backend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory_core.errors import StorageError

__all__ = ["Migration", "load_migrations", "migrations_dir"]

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    """One numbered SQL file."""

    number: int
    name: str
    sql: str


def migrations_dir(backend: Literal["sqlite", "postgres"]) -> Path:
    """A backend's SQL files: inside the installed wheel, else the checkout's migrations/."""
    packaged = Path(__file__).with_name(backend) / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations" / backend


def load_migrations(folder: Path) -> list[Migration]:
    """Read and order the migration files; numbers must be unique and contiguous from 1."""
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise StorageError(f"reading migrations: unexpected file name {path.name!r}")
        found.append(Migration(int(match.group(1)), path.stem, path.read_text(encoding="utf-8")))
    numbers = [m.number for m in found]
    if numbers != list(range(1, len(found) + 1)):
        raise StorageError(f"reading migrations: numbers must run 1..n, found {numbers}")
    return found
