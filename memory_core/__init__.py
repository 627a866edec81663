"""memstrata's domain: memories in four layers and four tiers, and the use cases over them."""

from memory_core.clock import SystemClock
from memory_core.config import Limits, RankingPolicy, TierPolicy
from memory_core.domain.models import Layer, Memory, SearchHit, Tier
from memory_core.errors import MemoryCoreError
from memory_core.ports import Clock, MemoryRepository
from memory_core.services.memories import MemoryService, SearchRequest

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
