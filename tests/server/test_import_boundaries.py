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
  write that needs them (or in the background with MEMSTRATA_EMBEDDING_PRELOAD=1);
- over stdio, the first `tools/list` of the default toolsets is answered before the
  scheduler (APScheduler) and the model preload start, with only the listed tools built and
  the modules of the other toolsets not imported; both start right after it.
A hybrid search needs numpy and the model; that is its job, so it is not listed here.
The hook commands are held to the same line by tests/e2e/test_hooks.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.catalog import DEFAULT_TOOLS

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
    # Other commands' modules: the parser imports a module only to parse its own command.
    "server.cli.copy",
    "server.cli.knowledge",
    "server.cli.setup",
    "server.cli.tools",
    "server.cli.ui",
    "server.hooks.entry",
    # The other tools' result models (StatsOut has its own module), the model's loader.
    "server.schemas.memories",
    "anyio",
    "greenlet",  # structlog's deprecated thread-local context
    "ssl",  # on the SQLite file: asyncio goes without TLS
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


# What a `stats` answered from the kept counts never imports (server/cli/lean_stats.py): the
# floor of any process that does is ~250 ms before memstrata runs (issue 21: < 250 ms).
_NOT_FOR_LEAN_STATS = (
    "pydantic",
    "pydantic_core",
    "asyncio",
    "structlog",
    "rich",
    "aiosqlite",
    "argparse",
    "sqlite_vec",
    "server.settings",
    "server.cli.commands",
    "memory_core.domain.models",
)


@pytest.fixture
def db_with_rows(db: Path) -> Path:
    """The migrated store (default model recorded) with memories in two projects."""
    writer = """
import asyncio, sys
from memory_core.domain.models import Layer
from server.container import open_container
from server.settings import ScheduleSettings, Settings

async def write():
    settings = Settings(embedding_model="none", schedule=ScheduleSettings(enabled=False))
    async with open_container(settings) as c:
        await c.memories.append("alpha", Layer.EPISODIC, "deployed billing to staging")
        await c.memories.learn("beta", "user.editor", "Helix")

asyncio.run(write())
"""
    subprocess.run(
        [sys.executable, "-c", writer],
        env={"MEMSTRATA_DB": str(db), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )
    return db


@pytest.mark.parametrize("args", [["stats"], ["stats", "--json"], ["stats", "-p", "beta"]])
def test_stats_from_the_kept_counts_imports_no_pydantic_asyncio_structlog_or_rich(
    db_with_rows: Path, args: list[str]
) -> None:
    loaded, code = _loaded(_CLI_RUNNER, args, db_with_rows, HEAVY + _NOT_FOR_LEAN_STATS)
    assert code == "0"
    assert loaded == []


_GC_RUNNER = """
import gc, sys
from server.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(f"GC {gc.isenabled()}\\n")
"""


@pytest.mark.parametrize(
    ("args", "collecting"),
    [(["stats"], False), (["recall", "no.such.key"], False), (["migrate"], True)],
)
def test_one_shot_queries_run_without_the_cyclic_gc(
    db: Path, args: list[str], collecting: bool
) -> None:
    """Off for start-up (it frees nothing then); back on for commands that may run long."""
    done = subprocess.run(
        [sys.executable, "-c", _GC_RUNNER, *args],
        capture_output=True,
        text=True,
        env={"MEMSTRATA_DB": str(db), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=True,
    )
    assert f"GC {collecting}" in done.stderr.splitlines()


def test_serve_answers_tools_list_without_numpy_or_the_model(db: Path) -> None:
    loaded, tools = _loaded(_SERVE_RUNNER, [], db)
    assert int(tools) > 10
    # The SDK brings its own web stack (starlette, uvicorn, its HTTP client): that is the
    # floor every MCP server pays; `serve` keeps rich's tracebacks (the SDK's own log handler
    # uses them). The scheduler is not built here: the lifespan starts it (test below).
    expected = {"mcp", "starlette", "uvicorn", "httpx2", "rich.traceback"}
    assert [m for m in loaded if m not in expected] == []
    assert "mcp" in loaded


_STDIO_SERVE_RUNNER = """
import json, sys
from server.cli import main
try:
    main(["serve"])  # stdin is empty: the client is gone, the server stops
except SystemExit as exc:
    code = exc.code
loaded = [m for m in ("rich", "pygments") if sys.modules.get(m) is not None]
sys.stderr.write("LOADED " + json.dumps(loaded) + f" {code}\\n")
"""


@pytest.mark.parametrize(
    ("log_format", "expected"), [("json", []), ("console", ["rich", "pygments"])]
)
def test_serve_logging_json_never_imports_rich(
    db: Path, log_format: str, expected: list[str]
) -> None:
    """structlog and the SDK's MCPServer() use rich when they can; JSON logs need none."""
    done = subprocess.run(
        [sys.executable, "-c", _STDIO_SERVE_RUNNER],
        input="",
        capture_output=True,
        text=True,
        env={"MEMSTRATA_DB": str(db), "MEMSTRATA_LOG_FORMAT": log_format, "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=True,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    assert line == f"LOADED {json.dumps(expected)} 0"


_LISTING_RUNNER = """
import asyncio, gc, json, sys, threading
gc.disable()  # as the console script starts (server.cli.main)
from mcp import Client
from server.app import build_server
from server.app_context import LiveContext
from server.settings import Settings
from server.protocol.surface import MemstrataServer

heavy = json.loads(sys.stdin.read())
live = LiveContext()
seen = {}

def preloading():
    embedder = live.current.container.embedder
    alive = any(t.name == "embedder-load" for t in threading.enumerate())
    return alive or embedder.ready or embedder.failure is not None

listed = MemstrataServer.list_tools
async def spy(self):
    if not seen:  # the state in which the first answer is built
        seen["loaded"] = [m for m in heavy if m in sys.modules]
        seen["built"] = sorted(t.name for t in self._tool_manager.list_tools())
        seen["scheduler"] = live.current.scheduler is not None
        seen["preloading"] = preloading()
        seen["gc"] = gc.isenabled()
    return await listed(self)
MemstrataServer.list_tools = spy

async def main():
    server = build_server(Settings(), live=live, warm_up_after_listing=True)
    async with Client(server) as client:
        seen["listed"] = sorted(t.name for t in (await client.list_tools()).tools)
        for _ in range(500):
            if live.current.scheduler is not None and preloading():
                break
            await asyncio.sleep(0.01)
        seen["jobs"] = sorted(j.id for j in live.current.scheduler.get_jobs())
        seen["preloaded"] = preloading()
        seen["gc_warm"] = gc.isenabled()

asyncio.run(main())
sys.stderr.write("SEEN " + json.dumps(seen) + "\\n")
"""

# Imported only for what the first `tools/list` of the default toolsets does not need.
AFTER_LISTING = (
    "apscheduler",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "server.tools.conversations",
    "server.tools.scratchpad",
    "server.tools.preferences",
    "server.tools.business",
    "server.schemas.conversations",
    "server.schemas.knowledge",
)


def test_serve_answers_its_first_tools_list_before_warming_up(db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LISTING_RUNNER],
        input=json.dumps(AFTER_LISTING),
        capture_output=True,
        text=True,
        # The defaults of `memstrata serve`: core and maintenance listed, the model preloaded,
        # the daily maintenance jobs scheduled.
        env={"MEMSTRATA_DB": str(db), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=True,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("SEEN "))
    seen = json.loads(line.removeprefix("SEEN "))
    assert seen["loaded"] == []
    assert seen["built"] == seen["listed"] == sorted(DEFAULT_TOOLS)
    assert seen["scheduler"] is False and seen["preloading"] is False and seen["gc"] is False
    # ...and right after the answer, both start, and the cyclic GC is back on.
    assert seen["jobs"] == ["prune_expired", "recalculate_tiers", "shared_patterns"]
    assert seen["preloaded"] is True and seen["gc_warm"] is True
