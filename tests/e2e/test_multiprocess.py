"""Several `memstrata serve` processes on one file: nothing lost, nothing locked, file intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.stress import run_stress

pytestmark = pytest.mark.e2e


async def test_four_servers_appending_and_searching_lose_nothing(tmp_path: Path):
    result = await run_stress(tmp_path / "shared.db", processes=4, appends=300, search_every=5)
    assert result.errors == []
    assert result.locked_errors == 0
    assert result.acked == 4 * 300
    assert result.searches == 4 * 300 // 5
    assert result.lost == []
    assert result.duplicated == []
    assert result.wrong_id == []
    assert result.integrity == "ok"
