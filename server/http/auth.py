"""Bearer tokens for streamable HTTP: where they come from, what each may do, and checking them.

Tokens come from `MEMSTRATA_AUTH_TOKENS` (comma-separated, full access) and/or
`MEMSTRATA_AUTH_TOKENS_FILE`, a JSON or TOML file (by suffix) of grants::

    [[tokens]]
    name = "ci"                 # shown in logs instead of the token
    token = "a-long-random-string"
    projects = ["billing"]      # omit for every project
    read_only = true            # omit for read and write

(JSON: `{"tokens": [{"name": ..., "token": ..., "projects": [...], "read_only": true}]}`.)
`TokenAuthority.verify_token` is the SDK's TokenVerifier protocol; lookups compare the presented
token with every known token in constant time, so timing reveals neither a token nor a prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from server.settings import Settings

__all__ = ["AuthConfigError", "Grant", "TokenAuthority", "is_loopback", "load_authority"]

MIN_TOKEN_CHARS = 16


class AuthConfigError(ValueError):
    """The token settings or file cannot be used (the message says why; never the token)."""


class Grant(BaseModel):
    """What one token may do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Shown in logs in place of the token.")
    token: str = Field(repr=False, min_length=MIN_TOKEN_CHARS)
    projects: tuple[str, ...] | None = Field(
        None, description="Projects this token may use; None means every project."
    )
    read_only: bool = Field(False, description="Only tools annotated read-only may be called.")

    def allows_project(self, project: str) -> bool:
        """Whether the grant covers this project."""
        return self.projects is None or project in self.projects


class _GrantFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: list[Grant]


@dataclass(frozen=True)
class TokenAuthority:
    """Known tokens and their grants; also the SDK's TokenVerifier."""

    grants: tuple[Grant, ...]

    def lookup(self, token: str) -> Grant | None:
        """The grant of a token, comparing against every token in constant time."""
        presented = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found: Grant | None = None
        for grant in self.grants:
            # Compare digests (equal length) and never stop early: the time taken does not
            # depend on which token matched, or how much of one.
            known = hashlib.sha256(grant.token.encode()).digest()
            if hmac.compare_digest(presented, known):
                found = grant
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        """TokenVerifier: an AccessToken naming the grant, or None for an unknown token."""
        grant = self.lookup(token)
        if grant is None:
            return None
        scopes = ["memory:read"] if grant.read_only else ["memory:read", "memory:write"]
        return AccessToken(token=token, client_id=grant.name, scopes=scopes)


def _read_file(path: Path) -> list[Grant]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuthConfigError(f"cannot read MEMSTRATA_AUTH_TOKENS_FILE {path}: {exc}") from exc
    try:
        raw = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        return _GrantFile.model_validate(raw).tokens
    except (ValueError, ValidationError) as exc:
        # pydantic errors would echo the offending input, which may be a token: keep only where.
        where = "; ".join(
            ".".join(str(p) for p in e["loc"]) + f": {e['msg']}"
            for e in (exc.errors(include_input=False) if isinstance(exc, ValidationError) else [])
        )
        raise AuthConfigError(
            f"MEMSTRATA_AUTH_TOKENS_FILE {path} is not a valid token file"
            + (f" ({where})" if where else " (invalid JSON/TOML)")
        ) from None


def load_authority(settings: Settings) -> TokenAuthority | None:
    """The configured tokens, or None when no token is configured (auth off).

    Raises:
        AuthConfigError: A token is too short, a name repeats, or the file is invalid.
    """
    grants: list[Grant] = []
    if settings.auth_tokens:
        for n, token in enumerate(
            (t.strip() for t in settings.auth_tokens.split(",") if t.strip()), 1
        ):
            if len(token) < MIN_TOKEN_CHARS:
                raise AuthConfigError(
                    f"MEMSTRATA_AUTH_TOKENS: token {n} is shorter than {MIN_TOKEN_CHARS} characters"
                )
            grants.append(Grant(name=f"env-token-{n}", token=token))
    if settings.auth_tokens_file is not None:
        grants.extend(_read_file(settings.auth_tokens_file))
    if not grants:
        return None
    names = [g.name for g in grants]
    if len(set(names)) != len(names):
        raise AuthConfigError("token names must be unique")
    tokens = [g.token for g in grants]
    if len(set(tokens)) != len(tokens):
        raise AuthConfigError("the same token is listed twice")
    return TokenAuthority(tuple(grants))


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
