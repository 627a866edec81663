"""`memstrata serve` over stdio: the real console script driven by the SDK client and raw pipes."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.catalog import DESTRUCTIVE_TOOLS, READ_ONLY_TOOLS, TOOL_NAMES
from tests.e2e.conftest import (
    PROJECT,
    error_text,
    memstrata_exe,
    ok,
    server_env,
    stdio_server,
)

pytestmark = pytest.mark.e2e


async def test_lists_the_eleven_tools_with_their_annotations(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        listed = await client.list_tools()

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOL_NAMES
    assert len(listed.tools) == len(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.annotations is not None, name
        assert tool.annotations.read_only_hint is (name in READ_ONLY_TOOLS), name
        if name in DESTRUCTIVE_TOOLS:
            assert tool.annotations.destructive_hint is True, name
        else:
            assert tool.annotations.destructive_hint is not True, name
        assert tool.output_schema is not None, name


async def test_every_tool_end_to_end(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        # append, then the same text again: one memory
        event = "Deployed the billing service to staging on Friday"
        stored = ok(
            await client.call_tool(
                "append",
                {"layer": "episodic", "content": event, "metadata": {"ticket": "OPS-12"}},
            )
        )
        assert stored["status"] == "created"
        assert stored["project"] == PROJECT
        assert stored["layer"] == "episodic"
        event_id = stored["id"]
        again = ok(await client.call_tool("append", {"layer": "episodic", "content": event}))
        assert again["status"] == "duplicate"
        assert again["id"] == event_id

        # search finds it and says why
        found = ok(await client.call_tool("search", {"query": "billing staging", "limit": 5}))
        assert len(found["hits"]) == 1
        hit = found["hits"][0]
        assert hit["id"] == event_id
        assert hit["content"] == event
        assert hit["metadata"] == {"ticket": "OPS-12"}
        assert hit["match"] == "strong" and "signals" not in hit  # signals on request
        explained = ok(
            await client.call_tool("search", {"query": "billing staging", "explain": True})
        )
        hit = explained["hits"][0]
        assert hit["tier"] == "ACTIVE"
        assert hit["signals"]["bm25_rank"] == 1
        assert hit["signals"]["tier"] == "ACTIVE"
        assert hit["score"] == pytest.approx(hit["signals"]["score"])

        # learn, then learn a new value under the same key
        learned = ok(
            await client.call_tool("learn", {"key": "user.preferred_language", "value": "Python"})
        )
        assert learned["status"] == "created"
        assert learned["key"] == "user.preferred_language"
        updated = ok(
            await client.call_tool(
                "learn", {"key": "user.preferred_language", "value": "Python 3.11"}
            )
        )
        assert updated["status"] == "updated"
        assert updated["id"] == learned["id"]
        assert updated["previous_value"] == "Python"

        # recall by exact key, and a miss
        recalled = ok(await client.call_tool("recall", {"key": "user.preferred_language"}))
        assert recalled["found"] is True
        assert recalled["value"] == "Python 3.11"
        assert recalled["id"] == learned["id"]
        missing = ok(await client.call_tool("recall", {"key": "user.favourite_editor"}))
        assert missing["found"] is False
        assert "value" not in missing and "id" not in missing
        assert missing["message"].startswith("No fact under")

        # a procedural rule comes back when recalling a situation it applies to
        rule = ok(
            await client.call_tool(
                "append",
                {
                    "layer": "procedural",
                    "key": "deploying to production",
                    "content": "Run the database migration dry-run first.",
                },
            )
        )
        assert rule["status"] == "created"
        situation = ok(
            await client.call_tool("recall", {"key": "about to start deploying to production"})
        )
        assert situation["found"] is False
        assert [r["id"] for r in situation["rules"]] == [rule["id"]]
        assert situation["rules"][0]["condition"] == "deploying to production"
        assert situation["rules"][0]["action"] == "Run the database migration dry-run first."

        # load_context: the briefing lists everything by id; with a layer, one line each
        context = ok(await client.call_tool("load_context", {"limit": 10}))
        assert context["project"] == PROJECT
        for memory_id in (event_id, learned["id"], rule["id"]):
            assert f"#{memory_id} " in context["briefing"]
        context = ok(await client.call_tool("load_context", {"limit": 10, "layer": "episodic"}))
        assert [item["id"] for item in context["items"]] == [event_id]
        assert context["items"][0]["tier"] == "ACTIVE"  # everything was just used

        # stats count what is there
        stats = ok(await client.call_tool("get_memory_stats", {}))
        assert stats["project"] == PROJECT
        assert stats["total"] == 3
        assert stats["by_tier"]["ACTIVE"] == 3
        assert stats["by_layer"]["episodic"] == 1
        assert stats["by_layer"]["semantic"] == 1
        assert stats["by_layer"]["procedural"] == 1
        assert stats["by_layer"].get("working", 0) == 0
        assert stats["content_bytes"] > 0
        assert stats["database_bytes"] > 0
        assert stats["stale_tiers"] == 0

        # maintenance: nothing is stale or EXPIRED yet
        recalculated = ok(await client.call_tool("recalculate_memory_tiers", {}))
        assert recalculated == {"scope": "*", "changed": 0}
        dry = ok(await client.call_tool("prune_expired_contexts", {"dry_run": True}))
        assert dry == {"project": PROJECT, "dry_run": True, "deleted": 0, "ids": []}
        pruned = ok(await client.call_tool("prune_expired_contexts", {}))
        assert pruned == {"project": PROJECT, "dry_run": False, "deleted": 0, "ids": []}

        # compact a session's working notes down to the newest one plus a summary
        for n in range(3):
            note = ok(
                await client.call_tool(
                    "append",
                    {"layer": "working", "content": f"scratch note {n}", "session_id": "s1"},
                )
            )
            assert note["status"] == "created"
        compacted = ok(
            await client.call_tool(
                "compact", {"layer": "working", "keep_last": 1, "session_id": "s1"}
            )
        )
        assert compacted["layer"] == "working"
        assert compacted["removed"] == 2
        assert compacted["kept"] == 1
        assert len(compacted["summary_ids"]) == 1
        working = ok(await client.call_tool("load_context", {"layer": "working"}))
        assert len(working["items"]) == 2
        contents = {item["id"]: item["content"] for item in working["items"]}
        assert contents[compacted["summary_ids"][0]].startswith("[Summary of 2 entries]")

        # forget one memory; it is gone, and forgetting it twice is an error
        forgotten = ok(await client.call_tool("forget", {"id": event_id}))
        assert forgotten == {"id": event_id, "deleted": True, "content": event}
        gone = ok(await client.call_tool("search", {"query": "billing staging"}))
        # Hybrid search may still return other, related memories; never the forgotten one.
        assert event_id not in [hit["id"] for hit in gone["hits"]]
        assert f"No memory with id {event_id}" in error_text(
            await client.call_tool("forget", {"id": event_id})
        )

        # clear with confirm deletes the rest: 1 fact, 1 rule, 2 working entries
        cleared = ok(await client.call_tool("clear", {"confirm": True}))
        assert cleared == {"project": PROJECT, "layer": None, "deleted": 4}
        empty = ok(await client.call_tool("get_memory_stats", {}))
        assert empty["total"] == 0


def _snapshot(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: stats[k] for k in ("total", "by_tier", "by_layer", "content_bytes", "newest")}


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("append", {"layer": "nope", "content": "x"}, "layer"),
    ("search", {"query": "kept", "limit": 0}, "limit"),
    ("load_context", {"limit": 0}, "limit"),
    ("append", {"layer": "episodic", "content": ""}, "content"),
    ("append", {"layer": "episodic", "content": "   "}, "content"),
    ("learn", {"key": " ", "value": "v"}, "key"),
    ("append", {"layer": "semantic", "content": "no key"}, "key"),
    ("clear", {}, "confirm"),
    ("forget", {"id": 999_999}, "999999"),
]


async def test_bad_arguments_are_tool_errors_that_change_nothing(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        ok(await client.call_tool("append", {"layer": "episodic", "content": "kept memory"}))
        ok(await client.call_tool("learn", {"key": "kept.fact", "value": "kept value"}))
        before = _snapshot(ok(await client.call_tool("get_memory_stats", {})))

        for tool, args, field in BAD_CALLS:
            result = await client.call_tool(tool, args)
            assert result.is_error, f"{tool}({args}) should fail"
            assert field in error_text(result), f"{tool}({args}): {error_text(result)}"

        after = _snapshot(ok(await client.call_tool("get_memory_stats", {})))
        recalled = ok(await client.call_tool("recall", {"key": "kept.fact"}))
        found = ok(await client.call_tool("search", {"query": "kept memory", "layer": "episodic"}))

    assert after == before
    assert before["total"] == 2
    assert recalled["value"] == "kept value"
    assert [hit["content"] for hit in found["hits"]] == ["kept memory"]


async def test_memories_survive_a_server_restart(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "first.log") as client:
        ok(await client.call_tool("learn", {"key": "restart.check", "value": "still here"}))
        ok(await client.call_tool("append", {"layer": "episodic", "content": "before restart"}))

    async with stdio_server(db_path, tmp_path / "second.log") as client:
        recalled = ok(await client.call_tool("recall", {"key": "restart.check"}))
        found = ok(await client.call_tool("search", {"query": "restart", "layer": "episodic"}))

    assert recalled["found"] is True
    assert recalled["value"] == "still here"
    assert [hit["content"] for hit in found["hits"]] == ["before restart"]


# -- raw pipes: nothing but JSON-RPC on stdout ---------------------------------------------

READ_TIMEOUT = 20.0


class _Lines:
    """Reads a pipe line by line in a daemon thread, so reads can time out."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, deadline: float) -> str | None:
        """The next line, or None at end of stream; fails the test at the deadline."""
        try:
            return self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            pytest.fail("timed out waiting for the server to write a line")

    def rest(self, timeout: float) -> list[str]:
        """Every remaining line up to end of stream."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the pipe did not reach end of stream"
        lines: list[str] = []
        while (line := self._queue.get_nowait()) is not None:
            lines.append(line)
        return lines


async def test_the_default_model_finds_a_paraphrase_that_shares_no_word(
    db_path: Path, tmp_path: Path
):
    async with stdio_server(db_path, tmp_path / "server.log") as client:
        for text in (
            "Book a flight to Tokyo next week.",
            "The release is blocked by a database bug.",
            "Quarterly budget review meeting on Monday.",
        ):
            ok(await client.call_tool("append", {"layer": "episodic", "content": text}))
        query = {"query": "reserve plane tickets for Japan", "explain": True}
        result: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        # The model loads in the background (at the first search), then a backfill embeds the
        # rows appended before it was ready: poll until the vectors are there.
        while time.monotonic() < deadline:
            result = ok(await client.call_tool("search", query))
            vectors = [h for h in result["hits"] if h["signals"].get("vector_rank") is not None]
            if result["mode"] == "hybrid" and vectors:
                break
            await asyncio.sleep(0.2)
    assert result["mode"] == "hybrid", result.get("notes")
    top = result["hits"][0]
    assert top["content"] == "Book a flight to Tokyo next week."
    assert top["signals"].get("bm25_rank") is None and top["signals"]["vector_rank"] == 1


def _request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr(db_path: Path):
    messages = [
        _request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw-pipe-test", "version": "0"},
            },
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(
            2,
            "tools/call",
            {"name": "append", "arguments": {"layer": "episodic", "content": "raw pipe memory"}},
        ),
        _request(3, "tools/call", {"name": "search", "arguments": {"query": "raw pipe"}}),
    ]
    proc = subprocess.Popen(
        [str(memstrata_exe()), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # INFO asked for: stdio serve logs only warnings by default.
        env=server_env(db_path) | {"MEMSTRATA_LOG_LEVEL": "INFO"},
        text=True,
        encoding="utf-8",
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        stdout, stderr = _Lines(proc.stdout), _Lines(proc.stderr)
        responses: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + READ_TIMEOUT
        # Requests run concurrently in the server, so the search goes out only once the
        # append has answered (else it may run before the row is stored).
        for batch, wanted in ((messages[:3], 2), (messages[3:], 3)):
            proc.stdin.write("".join(json.dumps(m) + "\n" for m in batch))
            proc.stdin.flush()
            while wanted not in responses:
                line = stdout.next(deadline)
                assert line is not None, f"stdout closed early; responses so far: {responses}"
                message = json.loads(line)  # every stdout line is JSON ...
                assert message.get("jsonrpc") == "2.0", line  # ... and JSON-RPC
                if "id" in message and ("result" in message or "error" in message):
                    responses[message["id"]] = message

        proc.stdin.close()
        assert proc.wait(timeout=15) == 0
        assert stdout.rest(timeout=5) == []
        stderr_lines = stderr.rest(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()

    assert responses[1]["result"]["protocolVersion"] == "2025-11-25"
    assert responses[1]["result"]["serverInfo"]["name"] == "memstrata"
    appended = responses[2]["result"]
    assert appended["isError"] is False
    assert appended["structuredContent"]["status"] == "created"
    searched = responses[3]["result"]
    assert searched["isError"] is False
    assert [h["content"] for h in searched["structuredContent"]["hits"]] == ["raw pipe memory"]

    logs = [json.loads(line) for line in stderr_lines if line.startswith("{")]
    assert logs, f"no JSON log lines on stderr: {stderr_lines}"
    for entry in logs:
        assert {"event", "level"} <= entry.keys(), entry
    assert any(entry["event"] == "memory.stored" for entry in logs)
