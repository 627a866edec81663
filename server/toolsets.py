"""Toolsets: named groups of tools, so a client lists (and pays context for) only what it uses.

Every listed tool's name, description and input schema sit in the model's context on every
turn; most conversations need only the core memory tools. This module holds the vocabulary
only (no MCP imports), so settings can validate `MEMSTRATA_TOOLSETS` cheaply.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "DEFAULT_TOOLSETS",
    "TOOLSET_PURPOSE",
    "Toolset",
    "parse_toolsets",
]


class Toolset(StrEnum):
    """A group of tools enabled together."""

    CORE = "core"
    MAINTENANCE = "maintenance"
    BULK = "bulk"
    CONVERSATIONS = "conversations"
    SCRATCHPAD = "scratchpad"
    PREFERENCES = "preferences"
    DOCUMENTS = "documents"
    CURATION = "curation"


# What each toolset is for, in the words `enable_toolset` and `memstrata tools` show.
TOOLSET_PURPOSE: dict[Toolset, str] = {
    Toolset.CORE: "write, search, recall and forget memories (every conversation needs these)",
    Toolset.MAINTENANCE: "statistics, tier recalculation, pruning, compaction, clearing",
    Toolset.BULK: "append many memories in one call",
    Toolset.CONVERSATIONS: "whole conversations: sessions, entries, summaries, tool-result cache",
    Toolset.SCRATCHPAD: "short per-session notes, promotable to preferences or documents",
    Toolset.PREFERENCES: "per-user preferences and playbooks (proven step sequences)",
    Toolset.DOCUMENTS: "a tenant's business documents and agent.md",
    Toolset.CURATION: "update, pin, list and forget memories by filter, with their history",
}

DEFAULT_TOOLSETS: frozenset[Toolset] = frozenset({Toolset.CORE, Toolset.MAINTENANCE})

ALL = "all"


def parse_toolsets(text: str) -> frozenset[Toolset]:
    """Parse a comma-separated list of toolset names; `all` means every toolset.

    Raises:
        ValueError: A name is not a toolset; the message lists the valid ones.
    """
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"no toolset named; choose from {valid_names()}")
    chosen: set[Toolset] = set()
    for name in names:
        if name == ALL:
            return frozenset(Toolset)
        try:
            chosen.add(Toolset(name))
        except ValueError:
            raise ValueError(f"unknown toolset {name!r}; choose from {valid_names()}") from None
    return frozenset(chosen)


def valid_names() -> str:
    """The accepted names, for error messages."""
    return ", ".join([*(t.value for t in Toolset), ALL])
