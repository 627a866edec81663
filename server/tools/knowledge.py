"""The cache-hierarchy tools: session scratchpad, user preferences/playbooks, business context."""

from __future__ import annotations

from server.settings import Settings
from server.surface import MemstrataServer
from server.tools import business, preferences, scratchpad

__all__ = ["register"]


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register the scratchpad, preference/playbook and business-context tools."""
    scratchpad.register(mcp, settings)
    preferences.register(mcp, settings)
    business.register(mcp, settings)
