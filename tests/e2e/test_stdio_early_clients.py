"""Real clients on a `memstrata serve` that answers their opening early: the SDK client, the
MCP Inspector CLI and Claude Code (pinned, against a stub model).

Each client first talks to a cold start (the SDK answers, its answers are recorded), then to a
start whose `import mcp` is held (tests/e2e/test_stdio_early.py): what the client gets while it
is held was answered early, and must be what the SDK gave. A warm start that found and
confirmed every answer leaves the cache file as it was.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.claude_cli import (
    PLUGIN_TOOLS,
    ClaudeWorkspace,
    StubModel,
    StubServer,
    all_text,
    mcp_call,
    require_claude,
)
from tests.e2e.conftest import memstrata_exe
from tests.e2e.test_inspector import inspector_path
from tests.e2e.test_stdio_early import HANG_GUARD_S, Starts

pytestmark = pytest.mark.e2e


@pytest.fixture
def starts(tmp_path: Path) -> Iterator[Starts]:
    made = Starts(tmp_path)
    try:
        yield made
    finally:
        made.open_gate()


def held_env(starts: Starts) -> dict[str, str]:
    """What a client must pass its server so that the server's SDK import waits."""
    starts.gate.unlink(missing_ok=True)
    return {"PYTHONPATH": str(starts.root / "site"), "SDK_GATE_FILE": str(starts.gate)}


def stamps(starts: Starts) -> list[tuple[str, int]]:
    return [(path.name, path.stat().st_mtime_ns) for path in starts.cache_files()]


async def _sdk_tools(env: dict[str, str], errlog: Path) -> list[dict[str, Any]]:
    params = StdioServerParameters(command=str(memstrata_exe()), args=["serve"], env=env)
    with errlog.open("a", encoding="utf-8") as err:
        async with Client(
            stdio_client(params, errlog=err), read_timeout_seconds=HANG_GUARD_S
        ) as client:
            listed = await client.list_tools()
    return [tool.model_dump(mode="json") for tool in listed.tools]


async def test_the_sdk_client_lists_the_same_tools_early_and_calls_one_after(
    starts: Starts,
) -> None:
    cold = await _sdk_tools(starts.env, starts.root / "sdk-cold.log")
    recorded = stamps(starts)
    assert recorded

    # The listing comes while the SDK is held; the call waits for it, so open the gate first.
    warm_env = {**starts.env, **held_env(starts)}
    params = StdioServerParameters(command=str(memstrata_exe()), args=["serve"], env=warm_env)
    with (starts.root / "sdk-warm.log").open("a", encoding="utf-8") as err:
        async with Client(
            stdio_client(params, errlog=err), read_timeout_seconds=HANG_GUARD_S
        ) as client:
            listed = await client.list_tools()
            assert [tool.model_dump(mode="json") for tool in listed.tools] == cold
            starts.open_gate()
            result = await client.call_tool("learn", {"key": "k.sdk", "value": "v"})
            assert result.is_error is False
    assert stamps(starts) == recorded
    assert "Traceback" not in (starts.root / "sdk-warm.log").read_text(encoding="utf-8")


def _inspector(starts: Starts, extra: dict[str, str]) -> dict[str, Any]:
    exe = inspector_path()
    if not exe.exists():
        pytest.fail(f"MCP Inspector CLI not found at {exe}: run `make inspector`")
    variables = {**starts.env, **extra}
    del variables["PATH"]  # the Inspector gives the server its own PATH
    command = [str(exe), "--cli"]
    for name, value in variables.items():
        command += ["-e", f"{name}={value}"]
    command += [str(memstrata_exe()), "serve", "--method", "tools/list"]
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr}"
    assert "Traceback" not in done.stderr
    return dict(json.loads(done.stdout))


def test_the_inspector_lists_the_same_tools_early(starts: Starts) -> None:
    cold = _inspector(starts, {})
    recorded = stamps(starts)
    assert recorded and cold["tools"]
    # Held: the Inspector lists and leaves before the server has imported the SDK.
    assert _inspector(starts, held_env(starts)) == cold
    starts.open_gate()
    assert stamps(starts) == recorded


@pytest.fixture
def stub() -> Iterator[StubModel]:
    require_claude()
    with StubServer() as model:
        yield model


def test_claude_code_gets_memstrata_early_and_calls_it_once_the_sdk_is_up(
    tmp_path: Path, stub: StubModel
) -> None:
    ws = ClaudeWorkspace.create(tmp_path / "work", stub)
    (tmp_path / "starts").mkdir()
    starts = Starts(tmp_path / "starts")
    ws.env.update({"XDG_CACHE_HOME": str(starts.cache)})
    try:
        cold = ws.run("hello")
        assert cold.returncode == 0, cold.stderr
        recorded = stamps(starts)
        assert recorded, "the cold start recorded nothing"

        # Held for the whole session: Claude Code's first request must still list memstrata.
        ws.env.update(held_env(starts))
        before = len(stub.conversation())
        held = ws.run("hello again")
        assert held.returncode == 0, held.stderr
        first = stub.conversation()[before]
        assert f"{PLUGIN_TOOLS}search" in all_text(first)
        assert stamps(starts) == recorded
    finally:
        starts.open_gate()

    # Not held: a tool call in the same kind of session reaches the SDK server.
    del ws.env["PYTHONPATH"], ws.env["SDK_GATE_FILE"]
    stub.script.extend(mcp_call("learn", {"key": "k.claude", "value": "early start"}))
    before = len(stub.conversation())
    run = ws.run("remember this")
    assert run.returncode == 0, run.stderr
    answered = [r for r in stub.conversation()[before:] if "early start" in all_text(r)]
    assert answered, "the tool call never reached the model's next request"
    stored = ws.call("recall", key="k.claude")
    assert "early start" in json.dumps(stored.model_dump(mode="json"))
