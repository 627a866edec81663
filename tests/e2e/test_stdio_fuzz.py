"""Hostile tool calls over real stdio pipes: stdout stays pure JSON-RPC, the server stays up."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.e2e.conftest import initialize_message, memstrata_exe, server_env
from tests.server.test_fuzz_tools import VAULT, tool_calls

pytestmark = pytest.mark.e2e

CASES = 300
FIRST_ID = 10


def _calls() -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    @settings(
        max_examples=CASES, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(call=tool_calls())
    def collect(call: tuple[str, dict[str, Any]]) -> None:
        calls.append(call)

    collect()
    return [c for c in calls if c[1].get("project") != VAULT]


def _check_answer(answer: dict[str, Any], call: tuple[str, dict[str, Any]]) -> None:
    if "error" in answer:  # a protocol error (bad params) must still say something
        assert answer["error"]["message"], answer
        return
    result = answer["result"]
    if result["isError"]:
        text = " ".join(block.get("text", "") for block in result["content"])
        assert text.strip(), answer
        assert "Internal error" not in text, (call, text)


def _deep(depth: int) -> str:
    return '{"d":' * depth + "1" + "}" * depth


def _check_answers(
    answers: dict[Any, dict[str, Any]],
    calls: list[tuple[str, dict[str, Any]]],
    undecodable: set[int],
    deep_id: int,
    last_id: int,
) -> None:
    # A message the SDK's JSON parser cannot decode (a lone surrogate: a valid JSON escape,
    # invalid Unicode; nesting past its limit) is answered with a parse error (issue 34.6),
    # under its id when the line names one that can still be read; the rest as ever.
    expected = {1, 2, *range(FIRST_ID, deep_id), last_id}
    missing = sorted(expected - set(answers))
    assert not missing, [
        (m, calls[m - FIRST_ID] if FIRST_ID <= m < deep_id else m) for m in missing[:3]
    ]
    for rid in sorted(set(range(FIRST_ID, deep_id)) - undecodable):
        _check_answer(answers[rid], calls[rid - FIRST_ID])
    for rid in undecodable:
        assert answers[rid]["error"]["code"] == -32700, answers[rid]
    # The deep line's id cannot be read either: its parse error names none.
    assert answers[None]["error"]["code"] == -32700


def test_hostile_calls_over_stdio_get_json_rpc_answers_only(db_path: Path, tmp_path: Path):
    calls = _calls()
    lines = [
        initialize_message("stdio-fuzz"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "learn",
                "arguments": {"key": "vault", "value": "kept", "project": VAULT},
            },
        },
    ]
    raw = [json.dumps(m) for m in lines]
    undecodable: set[int] = set()
    for n, (tool, args) in enumerate(calls):
        message = {
            "jsonrpc": "2.0",
            "id": FIRST_ID + n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        text = json.dumps(message, ensure_ascii=False)
        try:
            text.encode()  # raw UTF-8 (emoji as bytes) where possible ...
        except UnicodeEncodeError:
            undecodable.add(FIRST_ID + n)
            text = json.dumps(message)  # ... lone surrogates only as \ud800 escapes
        raw.append(text)
    deep_id = FIRST_ID + len(calls)
    # JSON nested deeper than any parser's recursion limit, as raw text no client would build.
    raw.append(
        f'{{"jsonrpc":"2.0","id":{deep_id},"method":"tools/call","params":{{"name":"append",'
        f'"arguments":{{"layer":"episodic","content":"deep","metadata":{_deep(5000)}}}}}}}'
    )
    last_id = deep_id + 1
    raw.append(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": last_id,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"key": "vault", "project": VAULT}},
            }
        )
    )
    env = {**server_env(db_path), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    with (tmp_path / "stderr.log").open("wb") as errlog:
        proc = subprocess.Popen(
            [str(memstrata_exe()), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
    assert proc.stdin is not None and proc.stdout is not None
    writer = threading.Thread(
        target=lambda: (proc.stdin.write(("\n".join(raw) + "\n").encode()), proc.stdin.flush()),  # type: ignore[union-attr]
        daemon=True,
    )
    writer.start()
    answers: dict[Any, dict[str, Any]] = {}
    out: queue.Queue[bytes] = queue.Queue()
    stdout = proc.stdout

    def pump() -> None:
        for chunk in stdout:
            out.put(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    try:
        while last_id not in answers and time.monotonic() < deadline:
            try:
                line = out.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            message = json.loads(line)  # every stdout line is JSON ...
            assert message.get("jsonrpc") == "2.0", line[:200]  # ... and JSON-RPC
            if "id" in message and ("result" in message or "error" in message):
                answers[message["id"]] = message
        assert proc.poll() is None, "the server must still be running"
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()

    _check_answers(answers, calls, undecodable, deep_id, last_id)
    assert len(undecodable) < len(calls) // 2
    assert answers[last_id]["result"]["structuredContent"]["value"] == "kept"


# Issue 34.6: each line the SDK's transport cannot read gets a JSON-RPC error
# (server.protocol.stdio_errors).
PING_ID = 900
MALFORMED: list[tuple[str, bytes, int]] = [
    ("not JSON", b"this is not json", -32700),
    ("a UTF-8 BOM", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":"bom","method":"ping"}', -32700),
    (
        "two messages on one line",
        b'{"jsonrpc":"2.0","id":"a","method":"ping"} {"jsonrpc":"2.0","id":"b","method":"ping"}',
        -32700,
    ),
    (
        "a lone surrogate",
        b'{"jsonrpc":"2.0","id":"sur","method":"ping","params":{"_meta":{"x":"\\ud800"}}}',
        -32700,
    ),
    ("5,000-deep nesting", b"[" * 5000 + b"]" * 5000, -32700),
    ("deep nesting in params", _deep(5000).encode(), -32700),
    ("JSON that is no message", b'{"hello": "world"}', -32600),
]


class Wire:
    """`memstrata serve` over raw pipes: write lines, read JSON-RPC lines back."""

    def __init__(self, argv: list[str], env: dict[str, str], errlog: Path) -> None:
        with errlog.open("wb") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        self.lines: queue.Queue[bytes] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None
        threading.Thread(target=self._pump, args=(stdout,), daemon=True).start()

    def _pump(self, stdout: Any) -> None:
        for line in stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def until(self, request_id: Any) -> list[dict[str, Any]]:
        """Every message up to and including the answer to `request_id`."""
        seen: list[dict[str, Any]] = []
        while True:
            line = self.lines.get(timeout=60)
            message = json.loads(line)
            assert message.get("jsonrpc") == "2.0", line[:200]
            seen.append(message)
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return seen

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc.stdout.close()


def _ping(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()


def _errors(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in seen if "error" in m]


def _check_malformed_lines_are_answered(wire: Wire) -> None:
    wire.send(json.dumps(initialize_message("stdio-malformed")).encode())
    wire.until(1)
    wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    for n, (what, raw, code) in enumerate(MALFORMED):
        wire.send(raw)
        wire.send(_ping(PING_ID + n))
        errors = _errors(wire.until(PING_ID + n))
        assert [e["error"]["code"] for e in errors] == [code], (what, errors)
        # The id is null, unless the line names one that can still be read (so that client
        # stops waiting): only the lone surrogate's here.
        assert errors[0]["id"] == ("sur" if what == "a lone surrogate" else None), what
        assert errors[0]["error"]["message"], what
    assert wire.proc.poll() is None, "the server must still be running"


def test_each_malformed_line_gets_a_parse_error_and_the_server_keeps_serving(
    db_path: Path, tmp_path: Path
) -> None:
    env = {**server_env(db_path), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    wire = Wire([str(memstrata_exe()), "serve"], env, tmp_path / "stderr.log")
    try:
        _check_malformed_lines_are_answered(wire)
        # A tool call after them is served as ever.
        call = {"name": "learn", "arguments": {"key": "k", "value": "kept", "project": "p"}}
        wire.send(
            json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}).encode()
        )
        assert wire.until(7)[-1]["result"]["isError"] is False
    finally:
        wire.close()


def test_a_malformed_first_line_is_answered_before_the_opening(
    db_path: Path, tmp_path: Path
) -> None:
    # Before the SDK is built the early wire (server.cli.lean_serve) holds the line for it.
    env = {**server_env(db_path), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    wire = Wire([str(memstrata_exe()), "serve"], env, tmp_path / "stderr.log")
    try:
        wire.send(b"\xef\xbb\xbf{}")
        wire.send(json.dumps(initialize_message("stdio-malformed")).encode())
        seen = wire.until(1)
        assert [e["error"]["code"] for e in _errors(seen)] == [-32700]
        assert "result" in seen[-1]
    finally:
        wire.close()


def test_the_sdk_path_without_the_early_wire_answers_them_too(
    db_path: Path, tmp_path: Path
) -> None:
    # server.app.serve_stdio without an early wire (a platform or start it does not cover).
    program = (
        "from server.app import build_server\n"
        "from server.settings import Settings\n"
        "build_server(Settings()).run('stdio')\n"
    )
    python = str(memstrata_exe().parent / "python")
    env = {**server_env(db_path), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    wire = Wire([python, "-c", program], env, tmp_path / "stderr.log")
    try:
        wire.send(json.dumps(initialize_message("stdio-malformed")).encode())
        wire.until(1)
        for n, (what, raw, code) in enumerate(MALFORMED):
            wire.send(raw)
            wire.send(_ping(PING_ID + n))
            errors = _errors(wire.until(PING_ID + n))
            assert [e["error"]["code"] for e in errors] == [code], (what, errors)
    finally:
        wire.close()
