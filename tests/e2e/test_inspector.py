"""The MCP Inspector CLI, an independent client, against `memstrata serve` over stdio.

Each Inspector call spawns a fresh server process, so the calls share a database file.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from tests.catalog import DESTRUCTIVE_TOOLS, READ_ONLY_TOOLS, TOOL_NAMES
from tests.e2e.conftest import memstrata_exe

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
INSPECTOR_PROJECT = "inspector"


def inspector_path() -> Path:
    """The Inspector CLI: $MEMSTRATA_INSPECTOR (set by `make test`), else the repo's copy."""
    configured = os.environ.get("MEMSTRATA_INSPECTOR")
    if configured:
        return Path(configured)
    return REPO_ROOT / ".inspector" / "node_modules" / ".bin" / "mcp-inspector"


class Inspector:
    """Runs `mcp-inspector --cli` against one database file."""

    def __init__(self, db: Path, toolsets: str = "all") -> None:
        self.db = db
        self.toolsets = toolsets

    def run(self, method: str, tool: str | None = None, **args: Any) -> dict[str, Any]:
        """One Inspector call; the JSON it prints. Fails the test if the Inspector is missing."""
        exe = inspector_path()
        if not exe.exists():
            pytest.fail(
                f"MCP Inspector CLI not found at {exe}: run `make inspector` "
                "(or set MEMSTRATA_INSPECTOR to its path)"
            )
        command = [
            str(exe),
            "--cli",
            "-e",
            f"MEMSTRATA_DB={self.db}",
            "-e",
            f"MEMSTRATA_PROJECT={INSPECTOR_PROJECT}",
            "-e",
            f"MEMSTRATA_TOOLSETS={self.toolsets}",
            str(memstrata_exe()),
            "serve",
            "--method",
            method,
        ]
        if tool is not None:
            command += ["--tool-name", tool]
        for name, value in args.items():
            text = value if isinstance(value, str) else json.dumps(value)
            command += ["--tool-arg", f"{name}={text}"]
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{command}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        return dict(json.loads(done.stdout))

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """A tools/call that must succeed; its structuredContent."""
        result = self.run("tools/call", tool, **args)
        assert result["isError"] is False, result
        return dict(result["structuredContent"])

    @cached_property
    def seeded(self) -> dict[str, int]:
        """Ids of memories written through the Inspector for the tool tests to use."""
        fact = self.call("learn", key="inspector.fact", value="seeded through the inspector")
        event = self.call("append", layer="episodic", content="Inspector seed about tomatoes")
        doomed = self.call("append", layer="episodic", content="Inspector note to forget")
        scratch = self.call("append", layer="working", content="Inspector scratch note")
        return {
            "fact": fact["id"],
            "event": event["id"],
            "doomed": doomed["id"],
            "scratch": scratch["id"],
        }


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    return Inspector(tmp_path_factory.mktemp("inspector") / "memory.db")


def test_inspector_lists_the_tools(inspector: Inspector):
    tools = {tool["name"]: tool for tool in inspector.run("tools/list")["tools"]}

    assert set(tools) == TOOL_NAMES
    for name, tool in tools.items():
        hints = tool["annotations"]
        assert hints.get("readOnlyHint", False) is (name in READ_ONLY_TOOLS), name
        assert (hints.get("destructiveHint") is True) is (name in DESTRUCTIVE_TOOLS), name
        assert "properties" in tool["inputSchema"], name
        assert "properties" in tool["outputSchema"], name


@pytest.mark.parametrize(
    "tool",
    [
        "append",
        "search",
        "learn",
        "recall",
        "load_context",
        "get_memory_stats",
        "recalculate_memory_tiers",
        "prune_expired_contexts",
        "compact",
        "forget",
        "clear",
    ],
)
def test_inspector_calls_every_tool(inspector: Inspector, tool: str):  # noqa: C901 - one case per tool
    ids = inspector.seeded
    match tool:
        case "append":
            out = inspector.call(
                tool,
                layer="episodic",
                content="Appended by the inspector",
                metadata={"source": "inspector", "n": 1},
            )
            assert out["status"] == "created"
            assert out["project"] == INSPECTOR_PROJECT
        case "search":
            out = inspector.call(tool, query="tomatoes", limit=3)
            assert [hit["id"] for hit in out["hits"]] == [ids["event"]]
        case "learn":
            out = inspector.call(tool, key="inspector.learned", value="learned via the CLI")
            assert out["status"] == "created"
            assert out["key"] == "inspector.learned"
        case "recall":
            out = inspector.call(tool, key="inspector.fact")
            assert out["found"] is True
            assert out["value"] == "seeded through the inspector"
        case "load_context":
            out = inspector.call(tool, limit=50)
            for memory_id in (ids["fact"], ids["event"]):  # the briefing lists them by id
                assert f"#{memory_id} [" in out["briefing"]
        case "get_memory_stats":
            out = inspector.call(tool)
            assert out["project"] == INSPECTOR_PROJECT
            assert out["by_layer"]["semantic"] >= 1
            assert out["total"] >= 2
        case "recalculate_memory_tiers":
            out = inspector.call(tool, project=INSPECTOR_PROJECT)
            assert out == {"scope": INSPECTOR_PROJECT, "changed": 0}
        case "prune_expired_contexts":
            out = inspector.call(tool, dry_run=True)
            assert out["dry_run"] is True
            assert out["ids"] == []
        case "compact":
            out = inspector.call(tool, layer="episodic", keep_last=100)
            assert out["layer"] == "episodic"
            assert out["removed"] == 0
            assert out["kept"] >= 1
            assert out["summary_ids"] == []
        case "forget":
            out = inspector.call(tool, id=ids["doomed"])
            assert out["deleted"] is True
            assert out["content"] == "Inspector note to forget"
        case "clear":
            out = inspector.call(tool, layer="working", confirm=True)
            assert out == {"project": INSPECTOR_PROJECT, "layer": "working", "deleted": 1}
        case _:
            pytest.fail(f"no case for {tool}")


def test_inspector_curates_memories(inspector: Inspector):
    """update, pin/unpin, list_memories and forget_where (dry run, then for real)."""
    first = inspector.call(
        "append", layer="episodic", content="Curated: the API listens on port 8080", tags=["cur"]
    )
    second = inspector.call(
        "append", layer="episodic", content="Curated: staging runs PostgreSQL 15", tags=["cur"]
    )
    updated = inspector.call("update", id=first["id"], content="Curated: the API port is 9090")
    assert updated["status"] == "updated" and updated["changed"] == ["content"]
    assert updated["previous_content"] == "Curated: the API listens on port 8080"
    history = inspector.call("history", id=first["id"])
    assert [v["content"] for v in history["versions"]] == ["Curated: the API listens on port 8080"]

    pinned = inspector.call("pin", ids=[first["id"], 999_999])
    assert pinned == {"pinned": True, "ids": [first["id"]], "missing": [999_999]}
    listed = inspector.call("list_memories", tags=["cur"], limit=1)
    assert [m["id"] for m in listed["memories"]] == [second["id"]]
    assert listed["next_cursor"] == second["id"]
    rest = inspector.call("list_memories", tags=["cur"], before_id=listed["next_cursor"])
    assert [m["id"] for m in rest["memories"]] == [first["id"]]
    assert rest["memories"][0]["pinned"] is True and "next_cursor" not in rest
    assert rest["memories"][0]["content"] == "Curated: the API port is 9090"
    unpinned = inspector.call("unpin", ids=[first["id"]])
    assert unpinned["pinned"] is False and unpinned["ids"] == [first["id"]]
    assert inspector.call("list_memories", tags=["cur"], pinned=True).get("memories", []) == []

    preview = inspector.call("forget_where", tags=["cur"])
    assert preview["dry_run"] is True and preview["count"] == 2
    assert sorted(preview["ids"]) == sorted([first["id"], second["id"]])
    assert len(preview["sample"]) == 2
    assert len(inspector.call("list_memories", tags=["cur"])["memories"]) == 2
    receipt = inspector.call("forget_where", tags=["cur"], dry_run=False)
    assert receipt["dry_run"] is False and receipt["count"] == 2
    assert receipt["removed"]["rows"] == 2 and receipt["removed"]["versions"] == 1
    assert set(receipt["remaining"].values()) == {0}
    assert inspector.call("list_memories", tags=["cur"]).get("memories", []) == []
