"""Every benchmark in bench/ answers `--help` with what it measures, and does nothing else.

docs/benchmarks.md names each figure's command; `--help` is where a reader finds what the
command measures and how to read it. The modules are run as `python -m bench.<name> --help`
would run them, in this process (runpy), so the suite pays no interpreter start per module.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# Modules the benchmarks import, with no command of their own.
LIBRARIES = {"__init__", "store", "precomputed_vectors", "command_line"}
COMMANDS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in LIBRARIES)


def test_the_benchmarks_are_found() -> None:
    assert {"locomo", "scale", "hooks", "hook_replay", "cold_start"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_benchmark_answers_help(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (BENCH / f"{name}.py").read_text(encoding="utf-8")
    # Without a parser, running the module would run the benchmark itself.
    parses = "ArgumentParser(" in source or "store_parser(" in source  # bench/command_line.py
    assert parses, f"bench/{name}.py has no argparse command line"
    monkeypatch.setattr(sys, "argv", [f"bench/{name}.py", "--help"])
    # Another benchmark may have imported this one; runpy warns when it runs a loaded module.
    monkeypatch.delitem(sys.modules, f"bench.{name}", raising=False)
    with pytest.raises(SystemExit) as stopped:
        runpy.run_module(f"bench.{name}", run_name="__main__", alter_sys=False)
    assert stopped.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage:")
    first_line = " ".join(source.split('"""')[1].strip().splitlines()[0].split())
    assert first_line in " ".join(shown.split()), "the description is the module's docstring"
