"""`memstrata serve` answers a client's opening before the SDK loads, exactly as the SDK would.

Each test starts the real console script twice or more with one answer cache
(XDG_CACHE_HOME): the first start has the SDK answer (and records its answers), the later ones
answer early. To show an answer really came before the SDK, a `sitecustomize` planted on
PYTHONPATH holds the server's `import mcp` until the test opens a gate file: whatever arrives
while the gate is shut was answered without the SDK. No wall-clock deadlines: the timeouts
below only stop a hung test.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.e2e.conftest import memstrata_exe, server_env

pytestmark = pytest.mark.e2e

HANG_GUARD_S = 120  # a wait that would never end fails the test instead

_GATE = """\
import os, sys, time

class _HoldTheSdk:
    # Holds `import mcp` until the gate file exists (tests/e2e/test_stdio_early.py).
    def find_spec(self, name, path=None, target=None):
        if name == "mcp":
            sys.meta_path.remove(self)
            while not os.path.exists(os.environ["SDK_GATE_FILE"]):
                time.sleep(0.01)
        return None

if os.environ.get("SDK_GATE_FILE"):
    sys.meta_path.insert(0, _HoldTheSdk())
"""

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {
        "name": "claude-code",
        "title": "Claude Code",
        "version": "2.1.332",
    },
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


def modern(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    """A 2026-07-28 request, as Claude Code 2.1.332 sends them (the envelope in `_meta`)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {"_meta": ENVELOPE, **params},
    }


# Claude Code 2.1.332's opening, in its order (recorded through a stdin-logging wrapper).
CLAUDE_CODE_OPENING: list[dict[str, Any]] = [
    modern("server-discover-probe-1", "server/discover"),
    modern(
        "listen:0",
        "subscriptions/listen",
        notifications={
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
        },
    ),
    modern(0, "server/discover"),
    modern(1, "prompts/list"),
    modern(2, "resources/list"),
    modern(3, "tools/list"),
]

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "handshake-client", "version": "1"},
    },
}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def plain(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params:
        message["params"] = params
    return message


HANDSHAKE_OPENING: list[dict[str, Any]] = [
    INITIALIZE,
    INITIALIZED,
    plain(1, "tools/list"),
    plain(2, "prompts/list"),
    plain(3, "resources/list"),
]


class Server:
    """One `memstrata serve` over raw pipes: JSON-RPC lines in, lines out."""

    def __init__(self, env: dict[str, str], stderr: Path) -> None:
        self._err = stderr.open("a", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(memstrata_exe()), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=env,
        )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        with stream:
            for line in stream:
                self._lines.put(json.loads(line))
        self._lines.put(None)

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        for message in messages:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        message = self._lines.get(timeout=HANG_GUARD_S)
        assert message is not None, "the server closed stdout"
        return message

    def answers(self, count: int) -> list[dict[str, Any]]:
        """The next `count` messages (responses and notifications), in arrival order."""
        return [self.receive() for _ in range(count)]

    def close_stdin(self) -> None:
        """How a client ends the session."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self) -> int:
        """The exit code, once the server has exited."""
        code = self.process.wait(timeout=HANG_GUARD_S)
        self._err.close()
        return code

    def close(self) -> int:
        """Close stdin and wait for the exit code."""
        self.close_stdin()
        return self.wait()

    def rest(self) -> list[dict[str, Any]]:
        """What the server wrote after the messages read so far, up to its exit."""
        out: list[dict[str, Any]] = []
        while (message := self._lines.get(timeout=HANG_GUARD_S)) is not None:
            out.append(message)
        return out


class Starts:
    """Starts of `memstrata serve` sharing one database and one answer cache."""

    def __init__(self, root: Path, toolsets: str = "core,maintenance") -> None:
        self.root = root
        self.cache = root / "cache"
        self.gate = root / "gate"
        (root / "site").mkdir()
        (root / "site" / "sitecustomize.py").write_text(_GATE, encoding="utf-8")
        self.env = {
            **server_env(root / "memory.db", toolsets=toolsets),
            "MEMSTRATA_EMBEDDING_MODEL": "none",
            "XDG_CACHE_HOME": str(self.cache),
        }
        self.count = 0

    def start(self, held: bool = False) -> Server:
        """A new server; `held`: its SDK import waits for `open_gate`."""
        self.count += 1
        env = dict(self.env)
        if held:
            self.gate.unlink(missing_ok=True)
            env["PYTHONPATH"] = str(self.root / "site")
            env["SDK_GATE_FILE"] = str(self.gate)
        return Server(env, self.root / f"stderr-{self.count}.log")

    def open_gate(self) -> None:
        self.gate.touch()

    def cache_files(self) -> list[Path]:
        return sorted((self.cache / "memstrata" / "serve").glob("*.json"))

    def stderr(self, start: int) -> str:
        return (self.root / f"stderr-{start}.log").read_text(encoding="utf-8")


@pytest.fixture
def starts(tmp_path: Path) -> Iterator[Starts]:
    made = Starts(tmp_path)
    try:
        yield made
    finally:
        made.open_gate()  # never leave a held server waiting


def by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Responses by id, notifications by method and subscription (arrival order may vary)."""
    keyed: dict[str, dict[str, Any]] = {}
    for message in messages:
        if "id" in message:
            keyed[f"id:{message['id']}"] = message
        else:
            sub = message.get("params", {}).get("_meta", {}).get(SUBSCRIPTION)
            keyed[f"{message['method']}:{sub}"] = message
    return keyed


def opening_answers(starts: Starts, opening: list[dict[str, Any]], count: int) -> dict[str, Any]:
    """A cold start's answers to `opening` (the SDK's own), which it records."""
    server = starts.start()
    server.send(*opening)
    answers = by_id(server.answers(count))
    assert server.close() == 0
    return answers


def test_claude_codes_opening_is_answered_before_the_sdk_loads_as_the_sdk_answers_it(
    starts: Starts,
) -> None:
    # Five answers and the subscription's acknowledgement; the listen stays open.
    sdk = opening_answers(starts, CLAUDE_CODE_OPENING, 6)
    assert {"id:3", "id:server-discover-probe-1"} <= set(sdk)
    assert "result" in sdk["id:3"] and sdk["id:3"]["result"]["tools"]
    [recorded] = starts.cache_files()

    server = starts.start(held=True)
    server.send(*CLAUDE_CODE_OPENING)
    early = by_id(server.answers(6))  # all of it while `import mcp` is held
    assert early == sdk
    # The SDK then serves the same conversation: the subscription answered early is its own.
    starts.open_gate()
    server.send(modern(4, "tools/call", name="enable_toolset", arguments={"toolset": "bulk"}))
    after = by_id(server.answers(2))
    assert "append_many" in json.dumps(after["id:4"]["result"])
    assert "notifications/tools/list_changed:listen:0" in after
    server.send(modern(5, "tools/list"))
    listed = server.receive()["result"]["tools"]
    assert "append_many" in [tool["name"] for tool in listed]
    assert server.close() == 0
    assert "early_answer_differed" not in starts.stderr(2)
    assert "Traceback" not in starts.stderr(2)
    assert starts.cache_files() == [recorded]


def test_a_handshake_client_gets_its_opening_early_and_its_first_call_from_the_sdk(
    starts: Starts,
) -> None:
    sdk = opening_answers(starts, HANDSHAKE_OPENING, 4)
    assert sdk["id:0"]["result"]["protocolVersion"] == "2025-11-25"

    server = starts.start(held=True)
    call = plain(4, "tools/call", name="learn", arguments={"key": "k.early", "value": "v"})
    server.send(*HANDSHAKE_OPENING, call)
    assert by_id(server.answers(4)) == sdk  # the call waits: it is not part of the opening
    starts.open_gate()
    answered = server.receive()
    assert answered["id"] == 4
    assert answered["result"]["isError"] is False
    # The handshake was replayed into the SDK's session: it serves what needs one.
    server.send(plain(5, "tools/call", name="recall", arguments={"key": "k.early"}))
    assert server.receive()["result"]["structuredContent"]["value"] == "v"
    server.send(plain(6, "tools/call", name="enable_toolset", arguments={"toolset": "bulk"}))
    notified = by_id(server.answers(2))
    assert notified["id:6"]["result"]["isError"] is False
    assert "notifications/tools/list_changed:None" in notified
    assert server.close() == 0
    assert "Traceback" not in starts.stderr(2)


def test_tools_list_before_initialized_is_answered_as_the_sdk_answers_it(
    starts: Starts,
) -> None:
    early_list = [INITIALIZE, plain(1, "tools/list"), INITIALIZED, plain(2, "prompts/list")]
    sdk = opening_answers(starts, early_list, 3)
    assert "result" in sdk["id:1"]

    server = starts.start(held=True)
    server.send(*early_list)
    assert by_id(server.answers(3)) == sdk
    starts.open_gate()
    assert server.close() == 0


def test_the_sdk_serves_what_it_has_not_answered_before(starts: Starts) -> None:
    opening_answers(starts, HANDSHAKE_OPENING, 4)
    other_client = {
        **INITIALIZE,
        "params": {**INITIALIZE["params"], "clientInfo": {"name": "b", "version": "2"}},
    }
    server = starts.start(held=True)
    server.send(other_client, INITIALIZED, plain(1, "tools/list"))
    starts.open_gate()  # nothing recorded for this client: the SDK answers once loaded
    answers = by_id(server.answers(2))
    assert answers["id:0"]["result"]["serverInfo"]["name"] == "memstrata"
    assert answers["id:1"]["result"]["tools"]
    assert server.close() == 0


def test_closing_stdin_during_the_hand_over_exits_cleanly(starts: Starts) -> None:
    opening_answers(starts, HANDSHAKE_OPENING, 4)
    server = starts.start(held=True)
    server.send(*HANDSHAKE_OPENING)
    server.answers(4)
    server.close_stdin()  # the client leaves while the SDK is still loading
    starts.open_gate()
    assert server.wait() == 0
    assert server.rest() == []
    assert "Traceback" not in starts.stderr(2)


def test_a_request_left_waiting_when_stdin_closes_gets_the_sdks_last_word(
    starts: Starts,
) -> None:
    opening_answers(starts, HANDSHAKE_OPENING, 4)
    server = starts.start(held=True)
    call = plain(4, "tools/call", name="learn", arguments={"key": "k.last", "value": "v"})
    server.send(*HANDSHAKE_OPENING, call)
    server.answers(4)
    server.close_stdin()
    starts.open_gate()
    assert server.wait() == 0
    # The SDK's last word on it, relayed before the process exits: its answer (EOF reaches
    # the SDK once the replayed opening is answered, so it may finish the call), or the error
    # it gives a request still in flight when its client left.
    [last] = server.rest()
    assert last["id"] == 4
    assert "result" in last or last["error"]["message"] == "Connection closed"
    assert "Traceback" not in starts.stderr(2)


def test_an_early_answer_that_differs_from_the_sdks_is_corrected_for_the_next_start(
    starts: Starts,
) -> None:
    sdk = opening_answers(starts, CLAUDE_CODE_OPENING, 6)
    [recorded] = starts.cache_files()
    data = json.loads(recorded.read_text(encoding="utf-8"))
    for answer in data["answers"].values():
        if "tools" in answer.get("result", {}):
            answer["result"]["tools"] = answer["result"]["tools"][:1]  # a stale list
    recorded.write_text(json.dumps(data), encoding="utf-8")

    stale = starts.start()
    stale.send(*CLAUDE_CODE_OPENING)
    assert len(by_id(stale.answers(6))["id:3"]["result"]["tools"]) == 1
    stale.send(modern(9, "ping"))
    stale.receive()  # by now the SDK has answered the replayed opening too
    assert stale.close() == 0
    assert "early_answer_differed" in starts.stderr(2)

    fixed = starts.start(held=True)
    fixed.send(*CLAUDE_CODE_OPENING)
    assert by_id(fixed.answers(6)) == sdk
    starts.open_gate()
    assert fixed.close() == 0


def test_answers_are_recorded_per_configuration(starts: Starts) -> None:
    opening_answers(starts, HANDSHAKE_OPENING, 4)
    starts.env["MEMSTRATA_TOOLSETS"] = "all"
    answers = opening_answers(starts, HANDSHAKE_OPENING, 4)
    assert "append_many" in [tool["name"] for tool in answers["id:1"]["result"]["tools"]]
    assert len(starts.cache_files()) == 2
