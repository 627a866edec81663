"""The server's instructions, for Claude Code with memstrata's hooks and for other clients.

Claude Code sends the instructions with every model request, so they are held to a token
budget, and they name only tools the client lists (issue 31).
"""

from __future__ import annotations

import re

import pytest

from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from server.settings import Settings
from server.toolsets import DEFAULT_TOOLSETS
from tests.answer_sizes import CLAUDE_CODE
from tests.mcp_client import hosted

# WordPiece tokens (the product's counter); the instructions before issue 31 took 248.
MAX_TOKENS = 180


def named_tools(instructions: str) -> list[str]:
    """The `tool_names` the instructions mention, in order."""
    return list(dict.fromkeys(re.findall(r"`([a-z_]+)`", instructions)))


def configured(settings: Settings, **update: object) -> Settings:
    defaults = {"toolsets": ",".join(sorted(DEFAULT_TOOLSETS))}
    return settings.model_copy(update={**defaults, **update})


async def instructions_and_tools(settings: Settings, **kw: object) -> tuple[str, set[str]]:
    async with hosted(settings, client_info=CLAUDE_CODE, **kw) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        text = client.instructions
    assert text
    return text, listed


async def test_with_the_hooks_they_say_when_to_search_and_what_to_store(
    settings: Settings,
) -> None:
    text, listed = await instructions_and_tools(configured(settings, client="claude-code-hooks"))
    named = named_tools(text)
    assert set(named) <= listed, named
    assert "load_context" not in named  # the SessionStart hook gave the briefing already
    assert named[:4] == ["search", "recall", "learn", "append"]
    assert "already in your context" in text and "hook may ask" in text
    assert "enable_toolset" in named
    assert WordPieceTokenCounter().count(text) <= MAX_TOKENS


async def test_without_hooks_they_start_with_load_context(settings: Settings) -> None:
    text, listed = await instructions_and_tools(configured(settings))
    named = named_tools(text)
    assert set(named) <= listed, named
    assert named[:3] == ["load_context", "search", "recall"]
    assert {"learn", "append", "enable_toolset"} <= set(named)
    assert "hook" not in text
    assert WordPieceTokenCounter().count(text) <= MAX_TOKENS


@pytest.mark.parametrize("client", ["generic", "claude-code-hooks"])
async def test_enable_toolset_is_named_only_where_it_adds_something(
    settings: Settings, client: str
) -> None:
    every, listed = await instructions_and_tools(
        configured(settings, client=client, toolsets="all")
    )
    assert "enable_toolset" not in every and set(named_tools(every)) <= listed
    http, listed = await instructions_and_tools(
        configured(settings, client=client), runtime_toolsets=False
    )
    assert "enable_toolset" not in http and set(named_tools(http)) <= listed


def test_the_plugin_and_setup_say_the_hooks_are_there(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tests.claude_cli import REPO_ROOT

    plugin = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    env = plugin["mcpServers"]["memstrata"]["env"]
    assert env["MEMSTRATA_CLIENT"] == "claude-code-hooks"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Settings().client == "claude-code-hooks"
