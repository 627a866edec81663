"""Load an embedder in the background so the server answers at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio
import structlog

from memory_core.errors import EmbeddingUnavailableError
from memory_core.ports import Embedder

__all__ = ["LazyEmbedder"]

log = structlog.get_logger(__name__)

_POLL_S = 0.02


class LazyEmbedder:
    """Holds a factory and, once it has run in a background thread, its embedder.

    `current()` never blocks: before the model is ready it returns None, and callers fall back
    to keyword search. A load failure is kept and reported; it is not retried.
    """

    def __init__(self, factory: Callable[[], Embedder], *, model_id: str, dims: int) -> None:
        self.model_id = model_id
        self.dims = dims
        self._factory = factory
        self._embedder: Embedder | None = None
        self._error: BaseException | None = None
        self._started = False
        self._lock = threading.Lock()
        self._done = threading.Event()

    @property
    def ready(self) -> bool:
        """True once the model has loaded."""
        return self._embedder is not None

    @property
    def failure(self) -> str | None:
        """Why loading failed, if it did."""
        return None if self._error is None else str(self._error)

    def start(self) -> None:
        """Begin loading in a daemon thread (idempotent)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._load, name="embedder-load", daemon=True).start()

    def _load(self) -> None:
        try:
            embedder = self._factory()
            self._embedder = embedder
            log.info("embedder.ready", model=self.model_id)
        except Exception as exc:
            self._error = exc
            log.error("embedder.failed", model=self.model_id, error=str(exc))
        finally:
            self._done.set()

    async def until_ready(self) -> Embedder | None:
        """Wait, without starting a load, until one has finished; None if it failed."""
        await self._wait_done(None)
        return self._embedder

    async def settle(self, max_wait: float) -> None:
        """Wait (bounded) for a load in progress to end, so the process can exit cleanly.

        Trigger: shutdown while the model loads. Why: onnxruntime aborts the process
        ("terminate called without an active exception") if the interpreter exits under a
        thread still building a session. Outcome: shutdown waits up to `max_wait` seconds.
        """
        if self._started:
            await self._wait_done(max_wait)

    async def _wait_done(self, max_wait: float | None) -> bool:
        # Polling, not a thread blocked in Event.wait: a cancelled waiter (shutdown) must
        # return at once, and anyio cannot abandon a thread that never wakes up.
        deadline = None if max_wait is None else anyio.current_time() + max_wait
        while not self._done.is_set():
            if deadline is not None and anyio.current_time() >= deadline:
                return False
            await anyio.sleep(_POLL_S)
        return True

    def current(self) -> Embedder | None:
        """The embedder if it is ready, else None (and loading is started)."""
        self.start()
        return self._embedder

    async def wait(self, max_wait: float | None = None) -> Embedder:
        """Start loading if needed and wait until the embedder is ready.

        Raises:
            EmbeddingUnavailableError: Loading failed or did not finish in `max_wait` seconds.
        """
        self.start()
        finished = await self._wait_done(max_wait)
        if self._embedder is not None:
            return self._embedder
        if not finished:
            raise EmbeddingUnavailableError(f"the model is still loading after {max_wait} s")
        raise EmbeddingUnavailableError(self.failure or "the model failed to load")
