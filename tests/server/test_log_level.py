"""Which log level each command starts with: servers a person watches log INFO, the rest warn."""

from __future__ import annotations

import pytest

from server.cli import commands
from server.settings import Settings


def level(monkeypatch: pytest.MonkeyPatch, *argv: str, env: str | None = None) -> str:
    if env is None:
        monkeypatch.delenv("MEMSTRATA_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", env)
    words = list(argv)
    args = commands._parser(commands._command_word(words)).parse_args(words)
    return commands._log_level(args.command or "serve", Settings(), args)


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (("serve",), None, "WARNING"),  # stdio: Claude Code shows each stderr line as [ERROR]
        ((), None, "WARNING"),  # bare `memstrata` is stdio serve
        (("serve", "--http"), None, "INFO"),
        (("ui",), None, "INFO"),
        (("stats",), None, "WARNING"),
        (("serve",), "INFO", "INFO"),  # an explicit level wins
        (("serve",), "DEBUG", "DEBUG"),
        (("serve", "--http"), "ERROR", "ERROR"),
        (("-v", "serve"), None, "INFO"),
        (("-vv", "serve"), "WARNING", "DEBUG"),
    ],
)
def test_log_level_per_command(
    monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...], env: str | None, expected: str
) -> None:
    assert level(monkeypatch, *argv, env=env) == expected
