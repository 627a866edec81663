"""Which `memory://` resources can be followed, and whether the caller may follow them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from mcp.server.auth.middleware.auth_context import get_access_token

__all__ = ["FOLLOWABLE", "FollowedUri", "may_follow", "parse_followed"]

SCHEME = "memory://"
FOLLOWABLE = "memory://{project}/session/{session_id}, memory://{project}/stats or /context"


@dataclass(frozen=True)
class FollowedUri:
    """A resource a client can subscribe to: a session's view, or a project's stats/context."""

    uri: str
    kind: Literal["session", "stats", "context"]
    project: str
    session_id: str | None = None


def parse_followed(uri: str) -> FollowedUri | None:
    """The followable resource `uri` names, or None (the URI's parts are percent-decoded)."""
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    project = unquote(parts[0])
    if not project:
        return None
    if parts[1:] in (["stats"], ["context"]):
        return FollowedUri(uri, "stats" if parts[1] == "stats" else "context", project)
    if len(parts) == 3 and parts[1] == "session" and parts[2]:
        return FollowedUri(uri, "session", project, unquote(parts[2]))
    return None


def may_follow(grants: object | None, project: str) -> bool:
    """Whether the caller's bearer token (if any) covers `project`.

    `grants` is the HTTP token verifier (server.http.auth.TokenAuthority, whose `lookup`
    gives a token's grant); None or another verifier: nothing to check.

    Over HTTP the guard (server.http.guard) refuses `resources/subscribe` outside a grant at
    the edge already; `subscriptions/listen` names its URIs inside a filter the guard does not
    read, so both handlers check here too. Without a token (stdio, an open loopback server)
    every project may be followed, as every one may be read.
    """
    token = get_access_token()
    lookup = getattr(grants, "lookup", None)
    if token is None or lookup is None:
        return True
    grant = lookup(token.token)
    return grant is not None and bool(grant.allows_project(project))
