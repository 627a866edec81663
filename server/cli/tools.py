"""`memstrata tools`: each toolset, its tools, and what they cost in a model's context."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from dataclasses import asdict, dataclass
from typing import Any

from memory_core.embeddings.wordpiece import WordPieceTokenCounter
from server.settings import Settings
from server.toolsets import DEFAULT_TOOLSETS, TOOLSET_PURPOSE, Toolset

__all__ = ["ToolCost", "add_parser", "run_command", "tool_costs"]

_EXAMPLES = """\
examples:
  memstrata tools                         # every toolset, its tools and their cost
  memstrata tools --json | jq '.toolsets'
  MEMSTRATA_TOOLSETS=core,conversations memstrata serve   # list those toolsets only"""


@dataclass(frozen=True)
class ToolCost:
    """One tool's share of the context a client fills with tool definitions."""

    name: str
    toolset: Toolset
    tokens: int
    chars: int


async def tool_costs(settings: Settings) -> list[ToolCost]:
    """Every tool (all toolsets), with its model-visible definition's size.

    Tokens are counted with the tokenizer the product counts budgets with by default
    (all-MiniLM-L6-v2's WordPiece), whatever model is configured, so figures compare.
    """
    from server.app import build_server  # the MCP SDK loads only for this command
    from server.protocol.surface import model_visible_definition

    every = settings.model_copy(update={"toolsets": "all"})
    mcp = build_server(every)
    counter = WordPieceTokenCounter()
    costs = []
    for tool in await mcp.list_tools():
        text = model_visible_definition(tool)
        costs.append(ToolCost(tool.name, mcp.toolset_of[tool.name], counter.count(text), len(text)))
    return costs


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `tools` on the `memstrata` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "tools",
        help="list the toolsets, their tools and their cost in context tokens",
        description=textwrap.fill(
            "List every toolset with its tools and what each costs in the context of the "
            "model (its name, description and input schema as a client sends them, counted "
            "with the product's tokenizer). A client pays for every listed tool on every "
            "turn; MEMSTRATA_TOOLSETS (or `serve --toolsets`) chooses which are listed.",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    return parser


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """Print the toolsets (enabled ones marked) with their tools and costs."""
    costs = asyncio.run(tool_costs(settings))
    enabled = settings.enabled_toolsets
    groups = [(ts, [c for c in costs if c.toolset is ts]) for ts in Toolset]
    listed = [c for c in costs if c.toolset in enabled]
    if args.json:
        report = {
            "enabled": sorted(enabled),
            "default": sorted(DEFAULT_TOOLSETS),
            "listed_tools": len(listed),
            "listed_tokens": sum(c.tokens for c in listed),
            "toolsets": [
                {
                    "toolset": ts.value,
                    "enabled": ts in enabled,
                    "tokens": sum(c.tokens for c in tools),
                    "tools": [
                        {k: v for k, v in asdict(c).items() if k != "toolset"} for c in tools
                    ],
                }
                for ts, tools in groups
            ],
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0
    out = []
    for ts, tools in groups:
        mark = "listed" if ts in enabled else "not listed"
        total = sum(c.tokens for c in tools)
        out.append(
            f"{ts.value} ({mark}; {len(tools)} tools, {total} tokens): {TOOLSET_PURPOSE[ts]}"
        )
        out += [f"  {c.name:<28} {c.tokens:>5} tokens" for c in tools]
    out.append(
        f"listed now: {len(listed)} tools, {sum(c.tokens for c in listed)} tokens "
        f"(MEMSTRATA_TOOLSETS={settings.toolsets})"
    )
    sys.stdout.write("\n".join(out) + "\n")
    return 0
