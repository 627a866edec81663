"""memstrata's domain: memories in four layers and four tiers, and the use cases over them.

The names below load on first use (PEP 562): importing any `memory_core.x` module runs this
file first, and eager imports here pulled the search service (numpy, structlog) into every
process, the Claude Code hooks included.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core.clock import SystemClock
    from memory_core.config.policies import Limits, RankingPolicy, TierPolicy
    from memory_core.domain.models import Layer, Memory, SearchHit, Tier
    from memory_core.errors import MemoryCoreError
    from memory_core.ports import Clock, MemoryRepository
    from memory_core.services.memories import MemoryService, SearchRequest

_HOMES = {
    "SystemClock": "memory_core.clock",
    "Limits": "memory_core.config.policies",
    "RankingPolicy": "memory_core.config.policies",
    "TierPolicy": "memory_core.config.policies",
    "Layer": "memory_core.domain.models",
    "Memory": "memory_core.domain.models",
    "SearchHit": "memory_core.domain.models",
    "Tier": "memory_core.domain.models",
    "MemoryCoreError": "memory_core.errors",
    "Clock": "memory_core.ports",
    "MemoryRepository": "memory_core.ports",
    "MemoryService": "memory_core.services.memories",
    "SearchRequest": "memory_core.services.memories",
}

__all__ = [
    "Clock",
    "Layer",
    "Limits",
    "Memory",
    "MemoryCoreError",
    "MemoryRepository",
    "MemoryService",
    "RankingPolicy",
    "SearchHit",
    "SearchRequest",
    "SystemClock",
    "Tier",
    "TierPolicy",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_core' has no attribute {name!r}")
    return getattr(import_module(home), name)
