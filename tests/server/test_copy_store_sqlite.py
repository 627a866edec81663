"""copy-store between two SQLite files follows the target's vector threshold."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlean

from memory_core.domain.models import Layer
from server.cli.copy import copy_between
from server.container import open_container
from server.settings import Settings
from tests.fakes import FrozenClock, ready_fake


def coarse_listed(path: Path) -> set[str]:
    conn = sqlean.connect(str(path))
    try:
        return {str(r[0]) for r in conn.execute("SELECT project FROM vector_coarse_projects")}
    finally:
        conn.close()


@pytest.mark.parametrize(("exact_max", "listed"), [(3, {"test"}), (100, set())])
async def test_a_project_copied_past_the_threshold_is_searched_coarse(
    settings: Settings, tmp_path: Path, clock: FrozenClock, exact_max: int, listed: set[str]
) -> None:
    lazy, _ = ready_fake()
    source = tmp_path / "source.db"
    async with open_container(
        settings.model_copy(update={"db": source}), clock, embedder=lazy
    ) as c:
        for i in range(6):
            await c.memories.append("test", Layer.EPISODIC, f"tea note {i}")
        assert c.indexer is not None
        await c.indexer.backfill(await lazy.wait(5))
    target = tmp_path / "target.db"
    report = await copy_between(f"sqlite://{source}", f"sqlite://{target}", exact_max=exact_max)
    assert report.verified and report.embeddings == 6
    assert coarse_listed(target) == listed
