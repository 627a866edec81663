"""Test doubles: a clock the test moves by hand, a deterministic embedder."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from memory_core.domain.match import Match
from memory_core.domain.models import Layer, Memory, RankSignals, SearchHit, Tier
from memory_core.embeddings import LazyEmbedder

START = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)


class FrozenClock:
    """A clock that only moves when told to."""

    def __init__(self, now: datetime = START) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def set(self, now: datetime) -> None:
        self._now = now


class FakeEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are close, others far apart.

    Each lowercased word adds a fixed pseudo-random unit vector (seeded by its hash), so the
    geometry is stable across runs and processes, and `calls` counts model invocations.
    """

    model_id = "fake-bow-32"
    dims = 32

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[i] += np.random.default_rng(seed).standard_normal(self.dims).astype(np.float32)
            norm = float(np.linalg.norm(out[i]))
            out[i] = out[i] / norm if norm else np.eye(self.dims, dtype=np.float32)[0]
        return out


def ready_fake() -> tuple[LazyEmbedder, FakeEmbedder]:
    """A LazyEmbedder whose FakeEmbedder is already loaded."""
    fake = FakeEmbedder()
    lazy = LazyEmbedder(lambda: fake, model_id=fake.model_id, dims=fake.dims)
    lazy.start()
    assert lazy._done.wait(5)
    return lazy, fake


def blocked_fake() -> tuple[LazyEmbedder, FakeEmbedder, threading.Event]:
    """A LazyEmbedder whose model 'loads' only once the returned event is set."""
    release = threading.Event()
    fake = FakeEmbedder()

    def load() -> FakeEmbedder:
        release.wait(10)
        return fake

    return LazyEmbedder(load, model_id=fake.model_id, dims=fake.dims), fake, release


def make_memory(
    mid: int,
    created_at: datetime,
    *,
    content: str | None = None,
    layer: Layer = Layer.EPISODIC,
) -> Memory:
    """A stored-looking Memory for pure domain tests (no database)."""
    return Memory(
        id=mid,
        project="p",
        layer=layer,
        key=None,
        content=content if content is not None else f"m{mid}",
        metadata={},
        session_id=None,
        created_at=created_at,
        updated_at=created_at,
        last_accessed=None,
        access_count=0,
        tier=Tier.ACTIVE,
        content_hash=str(mid),
        token_count=1,
    )


def make_hit(memory: Memory, *, rank: int = 1, match: Match = Match.WEAK) -> SearchHit:
    """A search hit of `memory`: keyword rank `rank`, full relevance, an ACTIVE tier."""
    signals = RankSignals(
        bm25_rank=rank,
        vector_rank=None,
        vector_distance=None,
        relevance=1.0,
        session_lift=0.0,
        tier=Tier.ACTIVE,
        tier_boost=0.0,
        recency=0.0,
        score=1.0,
        match=match,
    )
    return SearchHit(memory=memory, signals=signals)
