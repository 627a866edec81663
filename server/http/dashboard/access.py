"""Who is looking at the dashboard: signed session cookies, the token grant behind them, CSRF.

Browsers cannot add a bearer header to a link or a form, so the dashboard trades the token
once (the login form) for a session cookie: HttpOnly (scripts cannot read it), SameSite=Strict
(other sites' pages do not send it) and signed with a key that lives only in this process (a
restart signs everyone out). The cookie names the grant, never the token; the grant is looked
up again on every request. Each session carries a random CSRF token that every form repeats
and every POST must match, so even a same-site page cannot post on the user's behalf.

Without configured tokens the dashboard is as open as /mcp is then (loopback only, unless the
operator passed --insecure): every visitor has full access, and still needs the CSRF token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from server.http.auth import Grant, TokenAuthority

__all__ = ["COOKIE", "DashboardAccess", "Visitor"]

COOKIE = "memstrata_dashboard"
SESSION_SECONDS = 12 * 3600
LOCAL = "local"  # the visitor's name when no token is configured


@dataclass(frozen=True)
class Visitor:
    """A browser session: whose grant it holds (None: not signed in) and its CSRF token."""

    name: str | None
    projects: tuple[str, ...] | None
    read_only: bool
    csrf: str
    expires: int

    @property
    def signed_in(self) -> bool:
        """Whether the session holds a grant."""
        return self.name is not None

    def may_see(self, project: str) -> bool:
        """Whether the grant covers `project`."""
        return self.signed_in and (self.projects is None or project in self.projects)

    @property
    def may_change(self) -> bool:
        """Whether the grant may delete or prune (not read-only)."""
        return self.signed_in and not self.read_only


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class DashboardAccess:
    """Turns tokens into sessions and cookies back into visitors."""

    def __init__(
        self,
        authority: TokenAuthority | None,
        *,
        secret: bytes | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.authority = authority
        self._secret = secret or secrets.token_bytes(32)
        self._now = now

    @property
    def open(self) -> bool:
        """No token is configured: every visitor has full access."""
        return self.authority is None

    def _grant_visitor(self, grant: Grant | None, csrf: str | None = None) -> Visitor:
        expires = int(self._now()) + SESSION_SECONDS
        csrf = csrf or secrets.token_urlsafe(24)
        if self.authority is None:
            return Visitor(LOCAL, None, False, csrf, expires)
        if grant is None:
            return Visitor(None, None, True, csrf, expires)
        return Visitor(grant.name, grant.projects, grant.read_only, csrf, expires)

    def new_session(self) -> Visitor:
        """A fresh session: signed in when no token is configured, else anonymous."""
        return self._grant_visitor(None)

    def sign_in(self, token: str) -> Visitor | None:
        """A new session (new CSRF token: no fixation) for a valid token, else None."""
        if self.authority is None:
            return self.new_session()
        grant = self.authority.lookup(token)
        return None if grant is None else self._grant_visitor(grant)

    def from_bearer(self, token: str, csrf: str | None) -> Visitor | None:
        """The visitor an `Authorization: Bearer` header makes (scripts, benchmarks)."""
        if self.authority is None:
            return None
        grant = self.authority.lookup(token)
        return None if grant is None else self._grant_visitor(grant, csrf)

    def cookie(self, visitor: Visitor) -> str:
        """The signed cookie value of a session."""
        payload = _b64(
            json.dumps(
                {"g": visitor.name, "c": visitor.csrf, "e": visitor.expires},
                separators=(",", ":"),
            ).encode()
        )
        return f"{payload}.{self._sign(payload)}"

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, payload.encode(), hashlib.sha256).digest())

    def read(self, cookie: str | None) -> Visitor | None:
        """The session a cookie holds, or None when it is missing, forged, expired or revoked."""
        if not cookie or "." not in cookie:
            return None
        payload, signature = cookie.rsplit(".", 1)
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            data = json.loads(_unb64(payload))
            name, csrf, expires = data["g"], str(data["c"]), int(data["e"])
        except (ValueError, KeyError, TypeError):
            return None
        if expires < self._now():
            return None
        if self.authority is None:
            return Visitor(LOCAL, None, False, csrf, expires)
        if name is None:
            return Visitor(None, None, True, csrf, expires)
        # The grant by name, as configured now (the cookie never carries the token).
        grant = next((g for g in self.authority.grants if g.name == name), None)
        if grant is None:
            return None
        return Visitor(grant.name, grant.projects, grant.read_only, csrf, expires)

    @staticmethod
    def csrf_matches(visitor: Visitor, presented: str | None) -> bool:
        """Whether a form's CSRF field is this session's token (constant time)."""
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8", "surrogatepass"), visitor.csrf.encode()
        )
