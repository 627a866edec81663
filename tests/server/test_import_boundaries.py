"""What a cold process imports: the CLI commands and `serve` up to `tools/list` (issue 21).

Each case runs in a fresh interpreter and reports which heavy packages ended up in
sys.modules. Times are measured in bench/ (docs/benchmarks.md); these tests hold the
boundaries that keep them low:
- `stats`, `recall` and a keyword `search` never import the MCP SDK, numpy, onnxruntime,
  tokenizers, the HTTP client, asyncpg or the scheduler (numpy alone is ~120 ms cold), nor
  pydantic-settings (server/settings.py reads the environment itself) nor importlib.metadata
  (pydantic's plugin search, skipped by server/cli/__init__.py);
- `stats` opens the store without the composition root: no memory, conversation or
  knowledge service;
- `serve` imports the SDK (it speaks MCP), but opening the store and answering `tools/list`
  loads neither numpy nor the model: vectors and the embedder load at the first search or
  write that needs them (or in the background with MEMSTRATA_EMBEDDING_PRELOAD=1).
A hybrid search needs numpy and the model; that is its job, so it is not listed here.
The hook commands are held to the same line by tests/e2e/test_hooks.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "mcp",
    "rich.traceback",  # structlog's exception formatter (pygments with it), ~100 ms
    "numpy",
    "onnxruntime",
    "tokenizers",
    "httpx2",
    "asyncpg",
    "apscheduler",
    "uvicorn",
    "starlette",
)
# What `serve` needs (the SDK imports both) but the other commands do without.
NOT_FOR_COMMANDS = ("pydantic_settings", "importlib.metadata")

_CLI_RUNNER = """
import json, sys
from server.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = json.loads(sys.stdin.read())
loaded = [m for m in heavy if sys.modules.get(m) is not None]
sys.stderr.write("LOADED " + json.dumps(loaded) + f" {code}\\n")
"""

_SERVE_RUNNER = """
import asyncio, json, sys
from server.app import build_server
from server.container import open_container
from server.settings import Settings

async def first_tools_list():
    settings = Settings()
    async with open_container(settings):  # what the server's lifespan opens
        tools = await build_server(settings).list_tools()
    return len(tools)

n = asyncio.run(first_tools_list())
heavy = json.loads(sys.stdin.read())
sys.stderr.write("LOADED " + json.dumps([m for m in heavy if m in sys.modules]) + f" {n}\\n")
"""


def _loaded(
    runner: str, args: list[str], db: Path, heavy: tuple[str, ...] = HEAVY
) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", runner, *args],
        input=json.dumps(heavy),
        capture_output=True,
        text=True,
        env={"MEMSTRATA_DB": str(db), "MEMSTRATA_TOOLSETS": "all", "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=True,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    loaded, result = line.removeprefix("LOADED ").rsplit(" ", 1)
    return json.loads(loaded), result


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    subprocess.run(
        [sys.executable, "-m", "server", "migrate"],
        env={"MEMSTRATA_DB": str(path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )
    return path


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (["stats"], "0"),
        (["stats", "--json"], "0"),
        (["recall", "no.such.key"], "3"),
        (["search", "release notes", "--mode", "keyword"], "0"),
    ],
)
def test_cli_commands_that_do_not_speak_mcp_stay_light(
    db: Path, args: list[str], exit_code: str
) -> None:
    loaded, code = _loaded(_CLI_RUNNER, args, db, HEAVY + NOT_FOR_COMMANDS)
    assert code == exit_code  # the command ran to its end
    assert loaded == []


# What `stats` does not use: the memory service and its search, conversations, knowledge.
_NOT_FOR_STATS = (
    "server.container",
    "memory_core.services.memories",
    "memory_core.services.indexing",
    "memory_core.services.conversations",
    "memory_core.services.preferences",
    "memory_core.services.business",
    "memory_core.services.scratchpad",
    "memory_core.services.copy_store",
    "rich.progress",
)


@pytest.mark.parametrize(
    ("args", "unused"),
    [
        (["stats"], ("rich.pretty",)),  # structlog's, for tracebacks; the table needs none
        (["stats", "--json"], ("rich",)),
    ],
)
def test_stats_opens_only_the_store_and_the_maintenance_service(
    db: Path, args: list[str], unused: tuple[str, ...]
) -> None:
    loaded, code = _loaded(_CLI_RUNNER, args, db, _NOT_FOR_STATS + unused)
    assert code == "0"
    assert loaded == []


def test_serve_answers_tools_list_without_numpy_or_the_model(db: Path) -> None:
    loaded, tools = _loaded(_SERVE_RUNNER, [], db)
    assert int(tools) > 10
    # The SDK brings its own web stack (starlette, uvicorn, its HTTP client): that is the
    # floor every MCP server pays. The maintenance scheduler starts with the server, by design,
    # and `serve` keeps rich's tracebacks (the SDK's own log handler uses them).
    expected = {"mcp", "starlette", "uvicorn", "httpx2", "apscheduler", "rich.traceback"}
    assert [m for m in loaded if m not in expected] == []
    assert "mcp" in loaded
