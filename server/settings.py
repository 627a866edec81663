"""Settings: the only place the environment is read (MEMSTRATA_*, `__` for nesting).

Every setting is declared once, in `SettingsFields` (a plain pydantic model). `Settings` fills
it from the environment with a small reader that follows pydantic-settings' rules for this
model (prefix MEMSTRATA_, names case-insensitive, `__` for nested groups, a group also as JSON
with `__` variables merged into it, values given in code winning over the environment, group by
group). Why not pydantic-settings itself: importing it costs ~60-100 ms of every cold process
(it loads pydantic's dataclasses, importlib.metadata and its cloud sources), and the Claude Code
hooks and `memstrata stats` are cold processes with a budget of a few hundred milliseconds.
tests/server/test_settings_env.py holds the reader to pydantic-settings on many environments.
"""

from __future__ import annotations

import json
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
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
from pydantic.fields import FieldInfo

from memory_core.config.hooks import HookPolicy
from memory_core.config.knowledge import KnowledgePolicy
from memory_core.config.policies import (
    ConversationPolicy,
    Limits,
    PressurePolicy,
    RankingPolicy,
    TierPolicy,
)
from memory_core.domain.redaction import RedactionPolicy
from memory_core.embeddings.registry import EmbeddingSpec, parse_embedding_model
from memory_core.errors import InvalidInputError
from server.early_env import default_db_path
from server.toolsets import DEFAULT_TOOLSETS, Toolset, parse_toolsets

__all__ = [
    "ENV_PREFIX",
    "ScheduleSettings",
    "Settings",
    "SettingsError",
    "SettingsFields",
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


ENV_PREFIX = "MEMSTRATA_"
_NESTED = "__"


class SettingsError(ValueError):
    """A MEMSTRATA_* variable that cannot be read at all (a group's JSON is malformed)."""


def describe_settings_error(exc: Exception) -> str:
    """A configuration error as `MEMSTRATA_X: what is wrong`, one per line, never the value.

    pydantic's own message quotes the rejected input, and MEMSTRATA_DATABASE_URL or an API
    key may hold a password, so only the variable and the rule are said.
    """
    if not isinstance(exc, ValidationError):
        return str(exc)  # SettingsError names the variable and the JSON error, not the value
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = "__".join(str(part).upper() for part in error["loc"])
        name = f"MEMSTRATA_{loc}" if loc else "MEMSTRATA_*"
        lines.append(f"{name}: {error['msg']}")
    return "\n".join(lines)


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


class SettingsFields(BaseModel):
    """Everything configurable, with the defaults a local single-user install wants.

    The one declaration of the settings; `Settings` is this model read from the environment.
    """

    # validate_default: pydantic-settings' default, kept so defaults pass the same validators.
    # defer_build: only `Settings` is built at run time (this model's validator is not needed).
    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True, defer_build=True)

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
    client: Literal["generic", "claude-code-hooks"] = Field(
        "generic",
        description="Who the server's instructions are written for. 'claude-code-hooks' (set "
        "by the Claude Code plugin and `memstrata setup claude-code`): the hooks already give "
        "the model the project's briefing and per-prompt recall, so they say when to search "
        "and what to store; 'generic': they also say to call `load_context` first.",
    )
    project_scope: Literal["fixed", "git", "path"] = Field(
        "fixed",
        description="How the default project is chosen for a working directory (the "
        "server's, or the hook payload's `cwd`). 'fixed': MEMSTRATA_PROJECT. 'git': the "
        "repository, named `<name>@<identity>`: its normalised remote (origin, else the first "
        "one; e.g. `api@github.com/acme/api`), so clones and worktrees of one repository share "
        "a project; without a remote a hash of the main work tree's path (worktrees share it); "
        "outside git a hash of the directory's path. 'path': a hash of the work tree's own path, "
        "so every clone and worktree is a project of its own.",
    )
    tiers: TierPolicy = Field(default_factory=TierPolicy)
    ranking: RankingPolicy = Field(default_factory=RankingPolicy)
    limits: Limits = Field(default_factory=Limits)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    pressure: PressurePolicy = Field(default_factory=PressurePolicy)  # the storage cap
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
    keyword_postings_min: int = Field(
        20_000,
        ge=1,
        description="A server (`serve`) keeps the keyword index of SQLite projects with at "
        "least this many memories in memory and ranks their keyword matches there (FTS5's BM25, "
        "computed without scoring every match in SQL); smaller projects search FTS5 directly.",
    )
    keyword_postings_max: int = Field(
        250_000,
        ge=0,
        description="Projects above this many memories search FTS5 directly (the postings take "
        "~100 bytes a memory); 0 turns the in-memory keyword index off.",
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
    http_trusted_proxies: str = Field(
        "",
        description="Comma-separated addresses or networks (e.g. '127.0.0.1,10.0.0.0/8') of "
        "reverse proxies whose X-Forwarded-For and X-Forwarded-Proto `serve --http` believes; "
        "empty (the default): none, the connecting address is the client (sign-in throttle, "
        "logs) and the scheme is the connection's.",
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
        "`serve --http` and `ui` (stdio `serve` included: Claude Code shows every stderr line "
        "of a stdio server as an error) log only warnings (`memstrata -v` for INFO).",
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
    def _summarizer_needs_a_model(self) -> SettingsFields:
        if self.summarizer_url and not self.summarizer_model:
            raise ValueError("MEMSTRATA_SUMMARIZER_URL needs MEMSTRATA_SUMMARIZER_MODEL too")
        return self

    @property
    def store_location(self) -> str:
        """Where the store is, for messages: the PostgreSQL URL (no password) or the file."""
        return redacted_url(self.database_url) if self.database_url else str(self.db)

    def default_project(self, cwd: Path | None = None) -> str:
        """The project of a call that names none, for a working directory (the process's)."""
        from server.project.scope import project_for  # keeps the rule in one module

        return project_for(self.project, self.project_scope, cwd or Path.cwd())

    @property
    def embedding(self) -> EmbeddingSpec:
        """The parsed embedding model choice."""
        return parse_embedding_model(self.embedding_model, self.embedding_dims)


class Settings(SettingsFields):
    """The settings of this process: MEMSTRATA_* variables, under values given in code.

    `Settings(db=path)` (tests, benchmarks) still reads the environment for everything else,
    as pydantic-settings did: a value given here wins, and a group given as a dict is merged
    into the same group's variables.

    Raises:
        SettingsError: A group's JSON (e.g. MEMSTRATA_TIERS) is malformed.
        pydantic.ValidationError: A value breaks its field's rule.
    """

    model_config = ConfigDict(defer_build=False)

    def __init__(self, **values: Any) -> None:
        super().__init__(**_deep_update(environment_values(SettingsFields, os.environ), values))


def environment_values(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """The input `model` gets from MEMSTRATA_* variables, as pydantic-settings builds it.

    Names are case-insensitive (the last of two spellings wins). A field holding a model
    (a group such as `tiers`) or a collection is complex: its own variable is decoded as JSON
    and the group's `__` variables are merged into the object; every other value stays a string
    for pydantic to convert. JSON object keys are matched to field names case-insensitively.
    """
    env = {name.lower(): value for name, value in environ.items()}
    prefix = ENV_PREFIX.lower()
    data: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        value: Any = env.get(prefix + name)
        if _is_complex(field.annotation):
            if value is not None:
                value = _decoded(value, name)
                if isinstance(value, dict):
                    value = _deep_update(value, _nested(field, prefix + name + _NESTED, env, name))
            else:
                value = _nested(field, prefix + name + _NESTED, env, name) or None
        if value is None:
            continue
        data[name] = _canonical_keys(field.annotation, value) if isinstance(value, dict) else value
    return data


def _nested(field: FieldInfo, prefix: str, env: Mapping[str, str], top: str) -> dict[str, Any]:
    """`PREFIX_GROUP__A__B=v` -> {"a": {"b": v}}, values of complex fields decoded as JSON."""
    result: dict[str, Any] = {}
    for env_name, env_value in env.items():
        if not env_name.startswith(prefix):
            continue
        *keys, last = env_name[len(prefix) :].split(_NESTED)
        node: Any = result
        target: FieldInfo | None = field
        for key in keys:
            target = _next_field(target, key)
            if isinstance(node, dict):
                node = node.setdefault(key, {})
        target = _next_field(target, last)
        value: Any = env_value
        if target is not None and env_value and _is_complex(target.annotation):
            value = _decoded(env_value, top)
        if isinstance(node, dict):
            node[last] = value
    return result


def _next_field(field: FieldInfo | None, key: str) -> FieldInfo | None:
    """The field of `field`'s model that a `__` segment names (case-insensitively), if any."""
    if field is None:
        return None
    return _field_named(field.annotation, key)


def _field_named(annotation: Any, key: str) -> FieldInfo | None:
    for arg in typing.get_args(annotation):  # Optional[Group] and other unions
        found = _field_named(arg, key)
        if found is not None:
            return found
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        prefix = ENV_PREFIX.lower()
        for name, sub in annotation.model_fields.items():
            if key.lower() in (name.lower(), prefix + name.lower()):
                return sub
    return None


def _is_complex(annotation: Any) -> bool:
    """A model or a collection: read from JSON (pydantic-settings' `field_is_complex`)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, Literal):
        return False  # no setting is a union of a complex type and a scalar
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    kind = origin or annotation
    return isinstance(kind, type) and issubclass(kind, (list, tuple, set, frozenset, dict))


def _decoded(value: str, field: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        # The message names the variable and where the JSON breaks, never the value itself.
        raise SettingsError(
            f"{ENV_PREFIX}{field.upper()}: not valid JSON ({exc.args[0] if exc.args else exc})"
        ) from None


def _canonical_keys(annotation: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Keys of a group's dict renamed to its fields' names, matched case-insensitively."""
    inner = _without_optional(annotation)
    if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
        return values
    fields = inner.model_fields
    by_lower: dict[str, str] = {}
    for name in fields:
        by_lower.setdefault(name.lower(), name)
    out: dict[str, Any] = {}
    for key, value in values.items():
        field = by_lower.get(key.lower())
        if field is None:
            out[key] = value
        elif isinstance(value, dict):
            out[field] = _canonical_keys(fields[field].annotation, value)
        else:
            out[field] = value
    return out


def _without_optional(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 2:
        others = [a for a in args if a is not type(None)]
        if len(others) == 1:
            return others[0]
    return annotation


def _deep_update(base: dict[str, Any], *updates: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `updates` laid over it; dicts under the same key are merged, not replaced."""
    merged = dict(base)
    for update in updates:
        for key, value in update.items():
            if isinstance(merged.get(key), dict) and isinstance(value, dict):
                merged[key] = _deep_update(merged[key], value)
            else:
                merged[key] = value
    return merged
