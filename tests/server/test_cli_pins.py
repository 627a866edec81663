"""`memstrata pin` / `unpin` from a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.server.test_cli import db, run_cli, seed

__all__ = ["db"]  # the fixture, shared with test_cli


def test_pin_and_unpin_by_id(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db)
    capsys.readouterr()  # what seeding logged before the CLI configured logging
    code, out, _ = run_cli(capsys, "pin", "1", "999", "-p", "alpha", "--json")
    assert code == 0 and json.loads(out) == {"pinned": True, "ids": [1], "missing": [999]}
    code, out, _ = run_cli(capsys, "unpin", "1", "-p", "alpha")
    assert code == 0 and "unpinned: #1" in out
    code, out, _ = run_cli(capsys, "pin", "999", "-p", "alpha")
    assert code == 3 and "no such memory" in out
