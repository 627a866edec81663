"""Toolsets through real clients: the default surface, opt-in toolsets, run-time enabling."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.catalog import DEFAULT_TOOLS
from tests.e2e.conftest import initialize_message, memstrata_exe, ok, server_env

pytestmark = pytest.mark.e2e

DEFAULT = "core,maintenance"


async def _listed(env: dict[str, str], args: list[str], errlog: Path) -> set[str]:
    params = StdioServerParameters(command=str(memstrata_exe()), args=args, env=env)
    with errlog.open("a", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=30) as client:
            return {t.name for t in (await client.list_tools()).tools}


async def test_a_real_client_sees_the_default_surface_and_can_use_it(
    db_path: Path, tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=str(memstrata_exe()),
        args=["serve"],
        env={**server_env(db_path, toolsets=DEFAULT), "MEMSTRATA_EMBEDDING_MODEL": "none"},
    )
    with (tmp_path / "server.log").open("a", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=30) as client:
            assert {t.name for t in (await client.list_tools()).tools} == DEFAULT_TOOLS
            stored = ok(await client.call_tool("append", {"layer": "episodic", "content": "hi"}))
            found = await client.call_tool("search", {"query": "hi"})
            assert ok(found)["hits"][0]["id"] == stored["id"]
            text = found.content[0].text  # type: ignore[union-attr]
            assert text.splitlines()[1].startswith(f"#{stored['id']} episodic ACTIVE strong")
            refused = await client.call_tool("start_session", {})
            assert refused.is_error


async def test_opt_in_toolsets_by_environment_and_by_flag(db_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    by_env = await _listed(server_env(db_path, toolsets="core,conversations"), ["serve"], log)
    assert "start_session" in by_env and "add_session_entry" in by_env
    assert "get_memory_stats" not in by_env
    by_flag = await _listed(
        server_env(db_path, toolsets=DEFAULT), ["serve", "--toolsets", "core,scratchpad"], log
    )
    assert "scratchpad_write" in by_flag and "compact" not in by_flag


def test_a_bad_toolset_flag_is_a_usage_error(db_path: Path) -> None:
    done = subprocess.run(
        [str(memstrata_exe()), "serve", "--toolsets", "core,chat"],
        env=server_env(db_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown toolset 'chat'" in done.stderr and done.stdout == ""


class _Wire:
    """A stdio server spoken to line by line, as a client on protocol 2025-11-25 does."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(memstrata_exe()), "serve"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: Queue[dict[str, Any]] = Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def until_answer(self, request_id: int) -> list[dict[str, Any]]:
        """Every message up to and including the answer to `request_id`."""
        seen: list[dict[str, Any]] = []
        while True:
            try:
                message = self.lines.get(timeout=30)
            except Empty:  # pragma: no cover - a hung server fails the test here
                pytest.fail(f"no answer to request {request_id}; got {seen}")
            seen.append(message)
            if message.get("id") == request_id:
                return seen

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)  # it ends at EOF, before its file is closed
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def test_enable_toolset_announces_the_new_list_over_stdio(db_path: Path) -> None:
    wire = _Wire({**server_env(db_path, toolsets=DEFAULT), "MEMSTRATA_EMBEDDING_MODEL": "none"})
    try:
        wire.send(initialize_message("toolsets-e2e"))
        init = wire.until_answer(1)[-1]["result"]
        assert init["capabilities"]["tools"]["listChanged"] is True
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "enable_toolset", "arguments": {"toolset": "preferences"}},
            }
        )
        messages = wire.until_answer(2)
        methods = [m.get("method") for m in messages]
        assert "notifications/tools/list_changed" in methods
        assert "preferences_find" in messages[-1]["result"]["content"][0]["text"]
        wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        names = {t["name"] for t in wire.until_answer(3)[-1]["result"]["tools"]}
        assert names == DEFAULT_TOOLS | {
            "preferences_update",
            "preferences_get",
            "preferences_find",
            "preferences_list",
            "preferences_delete",
            "playbook_record",
            "playbook_find",
        }
    finally:
        wire.close()
