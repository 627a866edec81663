"""Settings: the only place the environment is read (MEMSTRATA_*, `__` for nesting)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory_core.config import ConversationPolicy, Limits, RankingPolicy, TierPolicy
from memory_core.domain.redaction import RedactionPolicy
from memory_core.embeddings import EmbeddingSpec, parse_embedding_model
from memory_core.errors import InvalidInputError
from memory_core.hook_config import HookPolicy
from memory_core.knowledge_config import KnowledgePolicy
from server.toolsets import DEFAULT_TOOLSETS, Toolset, parse_toolsets

__all__ = [
    "ScheduleSettings",
    "Settings",
    "default_db_path",
    "describe_settings_error",
    "redacted_url",
]


def redacted_url(url: str) -> str:
    """A database URL without its password (in the user part or the query), safe to log."""
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[-1]
        parts = parts._replace(netloc=f"{parts.username}:***@{host}")
    if parts.query:
        query = [
            (k, "***" if k.lower() in ("password", "sslpassword") else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ]
        parts = parts._replace(query=urlencode(query, safe="*"))
    return urlunsplit(parts)


def describe_settings_error(exc: Exception) -> str:
    """A configuration error as `MEMSTRATA_X: what is wrong`, one per line, never the value.

    pydantic's own message quotes the rejected input, and MEMSTRATA_DATABASE_URL or an API
    key may hold a password, so only the variable and the rule are said.
    """
    if not isinstance(exc, ValidationError):
        return str(exc)  # pydantic-settings' parse errors name the field and source only
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = "__".join(str(part).upper() for part in error["loc"])
        name = f"MEMSTRATA_{loc}" if loc else "MEMSTRATA_*"
        lines.append(f"{name}: {error['msg']}")
    return "\n".join(lines)


def default_db_path() -> Path:
    """`$XDG_DATA_HOME/memstrata/memory.db`, by default `~/.local/share/memstrata/memory.db`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata" / "memory.db"


def _valid_cron(value: str | None) -> str | None:
    if value:
        from server.cron import parse_cron  # deferred: apscheduler loads only to check a cron

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
    database_url: str | None = Field(
        None,
        description="postgresql://user:password@host:5432/name to keep every store (memories, "
        "conversations, scratchpad, preferences, playbooks, documents) in PostgreSQL + pgvector, "
        "shared by several replicas (extra [postgres]); unset, they stay in the SQLite file.",
        pattern=r"^postgres(ql)?://",
    )
    database_pool_max: int = Field(
        10,
        ge=3,
        le=1000,
        description="Most PostgreSQL connections one server process holds (at least 3: each "
        "of the two scheduled jobs holds one for its lease while its work needs another).",
    )
    project: str = Field("default", description="Project used when a tool call names none.")
    toolsets: str = Field(
        ",".join(sorted(DEFAULT_TOOLSETS)),
        description="Comma-separated toolsets the server lists: core, maintenance, bulk, "
        "conversations, scratchpad, preferences, documents, or all (`memstrata tools` shows "
        "each one's tools and their cost in context tokens).",
    )
    project_scope: Literal["fixed", "git"] = Field(
        "fixed",
        description="How the default project is chosen. 'fixed': MEMSTRATA_PROJECT. 'git': the "
        "name of the git work tree holding the working directory (the server's, or the hook "
        "payload's `cwd`), made a valid project name; outside git the directory's own name; "
        "MEMSTRATA_PROJECT when neither gives a valid name.",
    )
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
        True,
        description="`serve` loads the model in a background thread at start-up (tools "
        "answer at once meanwhile), so a client's first search can match by meaning; off, it "
        "loads at the first search or write that needs it (saves ~240 MB of RSS and ~0.5 s of "
        "CPU in a server that never searches; see docs/benchmarks.md).",
    )
    embedding_wait: float = Field(
        2.0,
        ge=0,
        le=60,
        description="Seconds a search by meaning (`search` semantic or hybrid, "
        "`preferences_find`, `playbook_find`, `search_business_context`) or a memory write "
        "waits for a model still loading (and a search for the start-up embedding of rows "
        "without vectors); past it, it goes on by keyword and says so in `notes`.",
    )
    vector_exact_max: int = Field(
        20_000,
        ge=0,
        description="Projects up to this many memories use exact vector search; larger ones "
        "(and any that once grew past it) a bit-quantised coarse pass plus exact rescoring.",
    )
    http_host: str = Field("127.0.0.1", description="Interface `serve --http` binds to.")
    http_port: int = Field(8765, ge=1, le=65535, description="Port `serve --http` listens on.")
    http_dashboard: bool = Field(
        True,
        description="`serve --http` also serves the web dashboard at / (same tokens and "
        "project grants as /mcp; `memstrata ui` opens it).",
    )
    redaction: RedactionPolicy = Field(default_factory=RedactionPolicy)
    auth_tokens: str | None = Field(
        None,
        description="Comma-separated bearer tokens for `serve --http`, each with full access.",
    )
    auth_tokens_file: Path | None = Field(
        None,
        description="A JSON or TOML file of bearer tokens for `serve --http`, each optionally "
        "limited to projects and to read-only use (see docs/reliability.md).",
    )
    http_allowed_hosts: str = Field(
        "",
        description="Comma-separated Host values `serve --http` accepts (e.g. 'mem.example:*'); "
        "loopback names are always accepted when bound to loopback.",
    )
    http_allowed_origins: str = Field(
        "", description="Comma-separated Origin values `serve --http` accepts from browsers."
    )
    http_max_body_bytes: int = Field(
        1_048_576, ge=1024, description="Largest HTTP request body `serve --http` accepts."
    )
    conversation: ConversationPolicy = Field(default_factory=ConversationPolicy)
    knowledge: KnowledgePolicy = Field(default_factory=KnowledgePolicy)
    hooks: HookPolicy = Field(default_factory=HookPolicy)
    summarizer_url: str | None = Field(
        None,
        description="Base URL of an OpenAI-compatible chat endpoint (e.g. "
        "'http://localhost:11434/v1') that writes conversation summaries; unset, the client's "
        "own model writes them, or a deterministic fallback.",
    )
    summarizer_model: str = Field("", description="Model name sent to the summarizer endpoint.")
    summarizer_api_key: SecretStr | None = Field(
        None, description="Bearer key for the summarizer endpoint, if it needs one."
    )
    summarizer_timeout: float = Field(
        30.0, gt=0, description="Seconds to wait for the summarizer before falling back."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO",
        description="Least severe log level written (to stderr). Unset, commands other than "
        "`serve` log only warnings (`memstrata -v` for INFO).",
    )
    log_format: Literal["json", "console"] = Field(
        "json", description="JSON lines (default) or human-readable console lines, on stderr."
    )

    @field_validator("toolsets")
    @classmethod
    def _known_toolsets(cls, value: str) -> str:
        parse_toolsets(value)  # raises ValueError naming the valid toolsets
        return value

    @property
    def enabled_toolsets(self) -> frozenset[Toolset]:
        """The parsed `toolsets`."""
        return parse_toolsets(self.toolsets)

    @field_validator("embedding_model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        try:
            parse_embedding_model(value)
        except InvalidInputError as exc:
            raise ValueError(exc.reason) from exc
        return value

    @model_validator(mode="after")
    def _summarizer_needs_a_model(self) -> Settings:
        if self.summarizer_url and not self.summarizer_model:
            raise ValueError("MEMSTRATA_SUMMARIZER_URL needs MEMSTRATA_SUMMARIZER_MODEL too")
        return self

    @property
    def store_location(self) -> str:
        """Where the store is, for messages: the PostgreSQL URL (no password) or the file."""
        return redacted_url(self.database_url) if self.database_url else str(self.db)

    def default_project(self, cwd: Path | None = None) -> str:
        """The project of a call that names none, for a working directory (the process's)."""
        from server.project_scope import project_for  # keeps the rule in one module

        return project_for(self.project, self.project_scope, cwd or Path.cwd())

    @property
    def embedding(self) -> EmbeddingSpec:
        """The parsed embedding model choice."""
        return parse_embedding_model(self.embedding_model, self.embedding_dims)
