"""Settings: the only place the environment is read (MEMSTRATA_*, `__` for nesting)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory_core.config import Limits, RankingPolicy, TierPolicy
from memory_core.embeddings import EmbeddingSpec, parse_embedding_model
from memory_core.errors import InvalidInputError

__all__ = ["ScheduleSettings", "Settings", "default_db_path"]


def default_db_path() -> Path:
    """`$XDG_DATA_HOME/memstrata/memory.db`, by default `~/.local/share/memstrata/memory.db`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata" / "memory.db"


def _valid_cron(value: str | None) -> str | None:
    if value:
        from server.scheduler import parse_cron  # deferred: scheduler imports settings

        parse_cron(value)  # raises ValueError with the reason
    return value


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

    @field_validator("recalculate_cron", "prune_cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return _valid_cron(value)


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
    embedding_model: str = Field(
        "all-MiniLM-L6-v2-int8",
        description="Embedder for semantic search: 'all-MiniLM-L6-v2-int8' (offline ONNX, "
        "default), 'st:<model>' (sentence-transformers, extra [st]) or 'none' (keyword only).",
    )
    embedding_dims: int = Field(
        384, ge=1, le=8192, description="Vector size of an 'st:' model (the default's is 384)."
    )
    embedding_preload: bool = Field(
        True, description="Load the model in the background at start-up, not at first use."
    )
    vector_exact_max: int = Field(
        20_000,
        ge=0,
        description="Projects up to this many memories use exact vector search; larger ones a "
        "bit-quantised coarse pass plus exact rescoring.",
    )
    http_host: str = Field("127.0.0.1", description="Interface `serve --http` binds to.")
    http_port: int = Field(8765, ge=1, le=65535, description="Port `serve --http` listens on.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Least severe log level written (to stderr)."
    )
    log_format: Literal["json", "console"] = Field(
        "json", description="JSON lines (default) or human-readable console lines, on stderr."
    )

    @field_validator("embedding_model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        try:
            parse_embedding_model(value)
        except InvalidInputError as exc:
            raise ValueError(exc.reason) from exc
        return value

    @property
    def embedding(self) -> EmbeddingSpec:
        """The parsed embedding model choice."""
        return parse_embedding_model(self.embedding_model, self.embedding_dims)
