"""What the README says about the tools, checked against the tools' schemas."""

from __future__ import annotations

import re
from pathlib import Path

from server.app import build_server
from server.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


async def test_the_tools_the_readme_says_take_project_do(settings: Settings) -> None:
    text = README.read_text()
    block = text[text.index("call() {") : text.index("Each tool called above also takes")]
    called = set(re.findall(r"^call (\w+)", block, flags=re.MULTILINE))
    assert len(called) >= 10
    schemas = {t.name: t.input_schema for t in await build_server(settings).list_tools()}
    without = sorted(n for n in called if "project" not in schemas[n].get("properties", {}))
    assert without == []
    assert "Every tool also takes" not in text


def test_the_readme_lists_every_cli_exit_code() -> None:
    from server.cli import commands as cli

    table = README.read_text()
    for code in re.findall(r"^  (\d+) ", cli._EXIT_CODES, flags=re.MULTILINE):
        assert f"| {code} |" in table, code


async def test_the_readme_counts_the_tools_and_their_tokens_as_memstrata_tools_does() -> None:
    """The tool and token counts in "Choosing the tools a client sees" (issue 35: they went stale).

    Token counts are rounded to hundreds in the README, so they are compared at that precision.
    """
    from server.cli.tools import tool_costs
    from server.toolsets import DEFAULT_TOOLSETS

    text = README.read_text()
    said = re.search(
        r"is (\d+) tools and about ([\d,]+) tokens \(all (\d+) tools: about ([\d,]+)\)", text
    )
    assert said is not None, "the sentence with the counts is gone from the README"
    tools, tokens, all_tools, all_tokens = (int(g.replace(",", "")) for g in said.groups())
    costs = await tool_costs(Settings(embedding_model="none"))
    default = [c for c in costs if c.toolset in DEFAULT_TOOLSETS]
    assert (tools, tokens) == (len(default), round(sum(c.tokens for c in default), -2))
    assert (all_tools, all_tokens) == (len(costs), round(sum(c.tokens for c in costs), -2))
