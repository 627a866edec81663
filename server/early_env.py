"""MEMSTRATA_* variables read before the settings are: the choices a cold start makes first.

Trigger: a command decides what to import (ssl, rich) before `server.settings` is loaded,
which costs a cold hook or `stats` tens of milliseconds. Why: the decision must follow the
settings reader's rule for names (case-insensitive), or a command would hide a module the
configured store needs. Outcome: one place that reads such a variable the reader's way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["default_db_path", "env_values", "uses_postgres"]


def default_db_path() -> Path:
    """`$XDG_DATA_HOME/memstrata/memory.db`, by default `~/.local/share/memstrata/memory.db`.

    The default of MEMSTRATA_DB (server.settings), here so that the lean `memstrata stats`
    (server/cli/lean_stats.py) finds the same file without loading the settings.
    """
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata" / "memory.db"


def env_values(environ: Mapping[str, str], name: str) -> list[str]:
    """The values of `name` (upper case) in `environ`, its name matched case-insensitively."""
    return [value for key, value in environ.items() if key.upper() == name]


def uses_postgres(environ: Mapping[str, str]) -> bool:
    """Whether the store is PostgreSQL: MEMSTRATA_DATABASE_URL is set and not empty."""
    return any(env_values(environ, "MEMSTRATA_DATABASE_URL"))
