"""Failed authentications, counted per client address, so a token cannot be guessed at line speed.

Tokens are long random strings, so guessing one is hopeless anyway; the throttle keeps a
script from trying (and from filling the log with refusals) at the rate the server answers.
Every failure counts the same, wherever it happens: a wrong token in the dashboard's sign-in
form, a wrong `Authorization: Bearer` on a page or on /mcp. After `limit` failures from one
address within `window_s`, every attempt from that address (right token or wrong) gets 429
with `Retry-After` until the window of its oldest failure ends.

A success clears nothing. Trigger: one client holding a valid token (a read-only one, say).
Why: if its sign-ins cleared the count, it could interleave them with guesses at another
token and never be held back. Outcome: failures leave only by age.

The address is the socket peer (`scope["client"]`), which uvicorn replaces by the
X-Forwarded-For client only for proxies listed in MEMSTRATA_HTTP_TRUSTED_PROXIES (none by
default), so no header a client sends can move it to another address's count. Held in
memory (a restart forgets it) and bounded: at most `max_clients` addresses are tracked, the
least recently failed dropped first, so a flood of addresses cannot grow it.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

import structlog
from starlette.types import Scope

__all__ = ["AuthThrottle", "peer"]

log = structlog.get_logger(__name__)


def peer(scope: Scope) -> str:
    """The client address of an ASGI request ("unknown" without one, e.g. a Unix socket)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class AuthThrottle:
    """Counts failed authentications per client address and says when one must wait."""

    def __init__(
        self,
        *,
        limit: int = 5,
        window_s: float = 60.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self.max_clients = max_clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.get(client)
        if failures is None:
            return deque()
        horizon = self._clock() - self.window_s
        while failures and failures[0] <= horizon:
            failures.popleft()
        if not failures:
            del self._failures[client]
        return failures

    def wait_s(self, client: str) -> int:
        """Seconds `client` must wait before trying again (0: it may try now)."""
        failures = self._recent(client)
        if len(failures) < self.limit:
            return 0
        return max(1, math.ceil(failures[0] + self.window_s - self._clock()))

    def failed(self, client: str) -> None:
        """Record a failed authentication of `client` (logged once when it must start waiting)."""
        failures = self._recent(client)
        self._failures.pop(client, None)
        failures.append(self._clock())
        while len(failures) > self.limit:
            failures.popleft()
        self._failures[client] = failures  # most recent last
        while len(self._failures) > self.max_clients:
            self._failures.popitem(last=False)
        if len(failures) == self.limit:
            # Once per hold, not per refused attempt: a held-back script cannot fill the log.
            log.warning("auth.throttled", client_address=client, window_s=self.window_s)
