"""Every size limit refuses with an error that names its field, and stores nothing."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from memory_core.config.policies import Limits
from memory_core.domain.inputs import MAX_METADATA_DEPTH

LIMITS = Limits()


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "append",
        {"layer": "episodic", "content": "x" * (LIMITS.max_content_chars + 1)},
        "content",
    ),
    (
        "append",
        {
            "layer": "episodic",
            "content": "ok",
            "metadata": {"blob": "x" * LIMITS.max_metadata_bytes},
        },
        "metadata",
    ),
    (
        "append",
        {"layer": "episodic", "content": "ok", "metadata": _nested(MAX_METADATA_DEPTH + 1)},
        "metadata",
    ),
    ("append", {"layer": "episodic", "content": "ok", "metadata": _nested(100)}, "metadata"),
    ("learn", {"key": "k" * (LIMITS.max_key_chars + 1), "value": "v"}, "key"),
    (
        "append",
        {"layer": "procedural", "key": "k" * (LIMITS.max_key_chars + 1), "content": "c"},
        "key",
    ),
    ("append", {"layer": "working", "content": "ok", "session_id": "s" * 129}, "session_id"),
    ("search", {"query": "ok", "limit": LIMITS.max_limit + 1}, "limit"),
    ("search", {"query": "ok", "limit": 0}, "limit"),
    ("load_context", {"limit": LIMITS.max_limit + 1}, "limit"),
    ("search", {"query": "ok", "token_budget": 0}, "token_budget"),
    ("search", {"query": "ok", "token_budget": 10**9 + 1}, "token_budget"),
    ("load_context", {"token_budget": -5}, "token_budget"),
    ("search", {"query": "q" * (LIMITS.max_content_chars + 1)}, "query"),
]


@pytest.mark.parametrize(("tool", "args", "field"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
async def test_limits_are_tool_errors_naming_the_field(
    client: Client, tool: str, args: dict[str, Any], field: str
):
    result = await client.call_tool(tool, args)
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert field in text, text
    assert "Internal error" not in text
    stats = await client.call_tool("get_memory_stats", {})
    assert stats.structured_content is not None
    assert stats.structured_content["total"] == 0


async def test_metadata_at_the_depth_limit_is_accepted(client: Client):
    result = await client.call_tool(
        "append", {"layer": "episodic", "content": "deep", "metadata": _nested(MAX_METADATA_DEPTH)}
    )
    assert not result.is_error
