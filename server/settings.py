"""Settings: the only place the environment is read (MEMSTRATA_*, `__` for nesting)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory_core.config import Limits, RankingPolicy, TierPolicy

__all__ = ["ScheduleSettings", "Settings", "default_db_path"]


def default_db_path() -> Path:
    """`$XDG_DATA_HOME/memstrata/memory.db`, by default `~/.local/share/memstrata/memory.db`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata" / "memory.db"


class ScheduleSettings(BaseModel):
    """Background maintenance (APScheduler cron expressions, UTC)."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = Field(True, description="Run scheduled maintenance inside the server.")
    recalculate_cron: str | None = Field(
        "0 0 * * *", description="When to recalculate tiers; empty disables the job."
    )
    prune_cron: str | None = Field(
        "0 0 * * 0", description="When to prune EXPIRED memories; empty disables the job."
    )
    prune_limit: int = Field(1000, ge=1, description="Most memories one scheduled prune deletes.")


class Settings(BaseSettings):
    """Everything configurable, with the defaults a local single-user install wants."""

    model_config = SettingsConfigDict(
        env_prefix="MEMSTRATA_", env_nested_delimiter="__", extra="ignore", frozen=True
    )

    db: Path = Field(default_factory=default_db_path, description="The SQLite database file.")
    project: str = Field("default", description="Project used when a tool call names none.")
    tiers: TierPolicy = Field(default_factory=TierPolicy)
    ranking: RankingPolicy = Field(default_factory=RankingPolicy)
    limits: Limits = Field(default_factory=Limits)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    http_host: str = Field("127.0.0.1", description="Interface `serve --http` binds to.")
    http_port: int = Field(8765, ge=1, le=65535, description="Port `serve --http` listens on.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = Field(
        "json", description="JSON lines (default) or human-readable console lines, on stderr."
    )
