"""How services reach the embedding model and count tokens: the ports of `memory_core.embeddings`.

`Vector` is defined here once; every port, service and backend that passes vectors imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

__all__ = ["Embedder", "EmbedderSource", "Vector"]

if TYPE_CHECKING:
    # Only an annotation here: importing numpy costs ~120 ms of every cold process, and the
    # hooks and most CLI commands never touch a vector.
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]


def __getattr__(name: str) -> Any:
    # `Vector` at run time (a type alias a module uses outside annotations) loads numpy on
    # first use: this module is on the import path of processes that never see a vector.
    if name == "Vector":
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors."""

    model_id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed texts into an (n, dims) array; CPU-bound, so run it off the event loop."""
        ...


class EmbedderSource(Protocol):
    """Where services get the embedder; it may still be loading."""

    model_id: str
    dims: int

    def current(self) -> Embedder | None:
        """The embedder if ready, else None (callers fall back to keyword search)."""
        ...

    async def wait(self, max_wait: float | None = None) -> Embedder:
        """Start loading if needed and wait (at most `max_wait` s) until the embedder is ready.

        Raises:
            EmbeddingUnavailableError: Loading failed or did not finish in time.
        """
        ...

    async def until_ready(self) -> Embedder | None:
        """Wait, without starting a load, until one has finished; None if it failed."""
        ...

    @property
    def failure(self) -> str | None:
        """Why loading failed, if it did (None while loading or once ready)."""
        ...
