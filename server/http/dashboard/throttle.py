"""Failed sign-ins, counted per client address, so a token cannot be guessed at line speed.

Tokens are long random strings, so guessing one is hopeless anyway; the throttle keeps a
script from trying (and from filling the log with refusals) at the rate the server answers.
After `limit` failed sign-ins from one address within `window_s`, that address gets 429 with
`Retry-After` until the window of its oldest failure ends; a successful sign-in clears it.
Held in memory (a restart forgets it) and bounded: at most `max_clients` addresses are
tracked, the least recently failed dropped first, so a flood of addresses cannot grow it.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["SignInThrottle"]


class SignInThrottle:
    """Counts failed sign-ins per client and says when one must wait."""

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
        """Record a failed sign-in of `client`."""
        failures = self._failures.pop(client, None) or deque()
        failures.append(self._clock())
        while len(failures) > self.limit:
            failures.popleft()
        self._failures[client] = failures  # most recent last
        while len(self._failures) > self.max_clients:
            self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        """Forget `client`'s failures."""
        self._failures.pop(client, None)
