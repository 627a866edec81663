"""The early stdio answers' bookkeeping: conversation keys, the answer cache, its fingerprint."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from server.cli import serve_answers
from server.cli.lean_serve import Conversation, LeanStdio, starts_stdio
from server.cli.serve_answers import AnswerCache, fingerprint

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "x": 1}
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a"}}


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method}


def keys(*messages: dict[str, Any] | None) -> list[str | None]:
    conversation = Conversation()
    return [conversation.key_of(message) for message in messages]


def test_a_requests_key_ignores_its_id_but_not_its_params() -> None:
    a = keys(request(1, "tools/list", {"_meta": ENVELOPE}))
    b = keys(request("x", "tools/list", {"_meta": ENVELOPE}))
    c = keys(request(1, "tools/list", {"_meta": {**ENVELOPE, "x": 2}}))
    assert a == b != c


def test_modern_requests_are_keyed_alone_and_handshake_ones_by_what_came_before() -> None:
    listing = request(9, "tools/list", {"_meta": ENVELOPE})
    probe = request(1, "server/discover", {"_meta": ENVELOPE})
    refused = request(2, "initialize", INITIALIZE)  # on a modern connection: an error
    assert keys(probe, listing)[1] == keys(probe, refused, listing)[2]

    plain = request(9, "tools/list")
    before = keys(request(0, "initialize", INITIALIZE), plain)[1]
    after = keys(request(0, "initialize", INITIALIZE), note("notifications/initialized"), plain)
    other = keys(request(0, "initialize", {**INITIALIZE, "clientInfo": {"name": "b"}}), plain)
    assert len({before, after[2], other[1]}) == 3


def test_an_initialize_opens_a_handshake_connection_even_with_an_envelope() -> None:
    enveloped = request(0, "initialize", {**INITIALIZE, "_meta": ENVELOPE})
    listing = request(9, "tools/list", {"_meta": ENVELOPE})
    probe = request(1, "server/discover", {"_meta": ENVELOPE})
    assert keys(enveloped, listing)[1] != keys(probe, listing)[1]


@pytest.mark.parametrize(
    "ender",
    [
        request(5, "tools/call", {"name": "search"}),
        note("notifications/roots/list_changed"),
        {"jsonrpc": "2.0", "id": 3, "result": {}},  # a response to the server
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "extra": 1},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": [1]},
        None,  # a line that is no JSON-RPC message
    ],
)
def test_anything_but_the_read_only_opening_ends_it(ender: dict[str, Any] | None) -> None:
    conversation = Conversation()
    assert conversation.key_of(request(1, "initialize", INITIALIZE)) is not None
    assert conversation.key_of(ender) is None
    assert conversation.key_of(request(2, "tools/list")) is None
    assert not conversation.opening


def test_cancellations_and_initialized_keep_the_opening() -> None:
    conversation = Conversation()
    conversation.key_of(request(1, "initialize", INITIALIZE))
    conversation.key_of(note("notifications/initialized"))
    conversation.key_of({**note("notifications/cancelled"), "params": {"requestId": 1}})
    assert conversation.key_of(request(2, "ping")) is not None


@pytest.mark.parametrize(
    ("args", "early"),
    [
        ([], True),
        (["serve"], True),
        (["serve", "--toolsets", "all", "-v"], True),
        (["serve", "--toolsets=core"], True),
        (["serve", "--http"], False),
        (["serve", "--htt"], False),  # argparse's abbreviation of --http
        (["serve", "--help"], False),
        (["serve", "--toolsets"], False),
        (["stats"], False),
    ],
)
def test_only_a_plain_stdio_serve_starts_early(args: list[str], early: bool) -> None:
    assert starts_stdio(args) is early


def test_the_fingerprint_follows_configuration_arguments_and_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for package in ("server", "memory_core"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(serve_answers, "_PACKAGE_ROOT", tmp_path)
    env = {"MEMSTRATA_DB": "/m.db", "HOME": "/h"}
    base = fingerprint(["serve"], env, "/w")
    assert fingerprint(["serve"], {**env, "HOME": "/other"}, "/w") == base
    assert fingerprint(["serve"], env, "/elsewhere") == base  # the project is fixed
    assert fingerprint(["serve"], {**env, "memstrata_toolsets": "all"}, "/w") != base
    assert fingerprint(["serve", "-v"], env, "/w") != base
    scoped = {**env, "MEMSTRATA_PROJECT_SCOPE": "git"}
    assert fingerprint(["serve"], scoped, "/a") != fingerprint(["serve"], scoped, "/b")

    code = tmp_path / "server" / "a.py"
    code.write_text("x = 22\n", encoding="utf-8")  # an edited tool, a new description
    assert fingerprint(["serve"], env, "/w") != base
    edited = fingerprint(["serve"], env, "/w")
    os.utime(code, ns=(1, 1))  # same size, another modification time
    assert fingerprint(["serve"], env, "/w") != edited


def test_the_cache_keeps_what_another_process_recorded_and_forgets_on_request(
    tmp_path: Path,
) -> None:
    path = tmp_path / "serve" / "f.json"
    one, two = AnswerCache(path), AnswerCache(path)
    one.put("a", {"result": {"tools": []}})
    two.put("b", {"ack": {"notifications": {}}})
    assert AnswerCache(path).answers == {
        "a": {"result": {"tools": []}},
        "b": {"ack": {"notifications": {}}},
    }
    one.put("a", None)
    assert AnswerCache(path).answers == {"b": {"ack": {"notifications": {}}}}
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


@pytest.mark.parametrize(
    "content", ["", "{", "[]", '{"format": 99, "answers": {}}', '{"format": 1}']
)
def test_an_unreadable_cache_is_an_empty_one(tmp_path: Path, content: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(content, encoding="utf-8")
    assert AnswerCache(path).answers == {}


def test_old_files_of_other_fingerprints_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "serve"
    folder.mkdir()
    old, recent = folder / "old.json", folder / "recent.json"
    for path in (old, recent):
        path.write_text(json.dumps({"format": 1, "answers": {}}), encoding="utf-8")
    os.utime(old, (0, 0))
    AnswerCache(folder / "new.json").put("k", {"result": {}})
    assert sorted(p.name for p in folder.iterdir()) == ["new.json", "recent.json"]


def test_the_cache_lives_under_xdg_cache_home(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert serve_answers.cache_dir(env) == tmp_path / "memstrata" / "serve"


def settles(wire: LeanStdio) -> bool:
    """Whether settle() returns without waiting out its hour (60 s guards a broken one)."""
    waiting = threading.Thread(target=wire.settle, args=(3600, 3600), daemon=True)
    waiting.start()
    waiting.join(60)
    return not waiting.is_alive()


def test_the_rest_of_the_start_waits_only_while_nothing_needs_the_sdk(tmp_path: Path) -> None:
    assert settles(LeanStdio(AnswerCache(tmp_path / "none.json")))  # nothing recorded

    cache = AnswerCache(tmp_path / "f.json")
    cache.answers["k"] = {"result": {}}
    idle = LeanStdio(cache)
    idle._last_message -= 3600  # quiet for an hour already
    assert settles(idle)

    wire = LeanStdio(cache)
    wire._take(json.dumps(request(1, "tools/call", {"name": "search"})).encode() + b"\n")
    assert settles(wire)  # a tool call waits for the SDK
    assert wire.client_left() is False

    closed = LeanStdio(cache)
    closed._end()
    assert settles(closed)  # stdin closed
    assert closed.client_left() is True
