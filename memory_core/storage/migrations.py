"""The numbered SQL migration files both backends apply: finding, ordering, what is pending.

Applying them is each backend's own (its driver, its transaction and locking rules); reading
them and the bookkeeping (which are pending, which version a store is at) are shared, so a
PostgreSQL store never imports the SQLite backend.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory_core.errors import SchemaMismatchError, StorageError

__all__ = ["Migration", "load_migrations", "migrations_dir", "pending_migrations", "schema_number"]

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
    """Read and order the migration files; numbers must be unique.

    Stores record migrations by name, so a gap in the numbers is harmless at run time; the
    shipped set running 1..n is checked by the test suite instead (tests/test_architecture.py).
    """
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise StorageError(f"reading migrations: unexpected file name {path.name!r}")
        found.append(Migration(int(match.group(1)), path.stem, path.read_text(encoding="utf-8")))
    numbers = [m.number for m in found]
    if len(set(numbers)) != len(numbers):
        raise StorageError(f"reading migrations: numbers must be unique, found {numbers}")
    return sorted(found, key=lambda m: m.number)


def pending_migrations(migrations: Iterable[Migration], applied: set[str]) -> list[Migration]:
    """The migrations a store has not applied yet, in order.

    Raises:
        SchemaMismatchError: The store has migrations this code does not know (it is newer).
    """
    migrations = list(migrations)
    unknown = applied - {m.name for m in migrations}
    if unknown:
        raise SchemaMismatchError(
            f"the database was upgraded by a newer memstrata (unknown migrations: "
            f"{', '.join(sorted(unknown))}); upgrade memstrata to open it"
        )
    return [m for m in migrations if m.name not in applied]


def schema_number(applied: Iterable[str]) -> int:
    """The number of the newest applied migration (0 when none is)."""
    return max((int(name[:4]) for name in applied), default=0)
