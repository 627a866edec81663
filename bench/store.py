"""A store for benchmarks: the server's own composition root, with a frozen clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

from memory_core.config.policies import RankingPolicy
from server.container import Container, open_container
from server.settings import ScheduleSettings, Settings

FIXED_NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FixedClock:
    """Every read and write happens at the same instant: tiers and recency stay neutral."""

    def now(self) -> datetime:
        return FIXED_NOW


@asynccontextmanager
async def open_bench_store(
    path: Path, *, model: str, ranking: RankingPolicy | None = None
) -> AsyncIterator[Container]:
    """Open `path` as the server would, with `model` ('none' for keyword only) loaded."""
    settings = Settings(
        db=path,
        embedding_model=model,
        ranking=ranking or RankingPolicy(),
        schedule=ScheduleSettings(enabled=False),
    )
    async with open_container(settings, FixedClock()) as container:
        if container.embedder is not None:
            await container.embedder.wait()
        try:
            yield container
        finally:
            if container.indexer is not None:
                await container.indexer.aclose()
