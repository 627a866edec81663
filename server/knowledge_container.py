"""Wiring of the scratchpad, preferences/playbooks and business-context services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_core.domain.redaction import RedactionPolicy

if TYPE_CHECKING:
    # The services load numpy; server.backends imports this module on every process that
    # opens a store (the hooks too), so they are imported where they are built.
    from memory_core.knowledge_config import KnowledgePolicy
    from memory_core.knowledge_ports import (
        DocumentStore,
        EmbeddingProvider,
        PlaybookStore,
        PreferenceStore,
        ScratchpadStore,
    )
    from memory_core.ports import Clock
    from memory_core.services.business import BusinessService
    from memory_core.services.preferences import PreferenceService
    from memory_core.services.scratchpad import ScratchpadService

__all__ = ["KnowledgeServices", "KnowledgeStores", "build_knowledge"]


@dataclass(frozen=True)
class KnowledgeStores:
    """The storage of the three tiers, from one backend (server/backends.py opens them)."""

    scratchpad: ScratchpadStore
    preferences: PreferenceStore
    playbooks: PlaybookStore
    documents: DocumentStore


@dataclass(frozen=True)
class KnowledgeServices:
    """The three tiers of the cache hierarchy: session, user, tenant."""

    scratchpad: ScratchpadService
    preferences: PreferenceService
    business: BusinessService


def build_knowledge(
    stores: KnowledgeStores,
    embedder: EmbeddingProvider | None,
    clock: Clock,
    policy: KnowledgePolicy,
    *,
    read_wait: float = 0.0,
    redaction: RedactionPolicy | None = None,
) -> KnowledgeServices:
    """Build the services on the stores of the configured backend.

    `read_wait` is how long a search by meaning waits for a model still loading;
    `redaction` is the gate every write of the three tiers passes (default: redact all).
    """
    from memory_core.services.business import BusinessService
    from memory_core.services.embedding_access import EmbeddingAccess
    from memory_core.services.preferences import PreferenceService
    from memory_core.services.scratchpad import ScratchpadService

    gate = redaction or RedactionPolicy()
    access = EmbeddingAccess(
        provider=embedder, write_wait=policy.embed_wait_seconds, read_wait=read_wait
    )
    preferences = PreferenceService(
        preferences=stores.preferences,
        playbooks=stores.playbooks,
        embedding=access,
        clock=clock,
        policy=policy,
        redaction=gate,
    )
    business = BusinessService(
        store=stores.documents, embedding=access, clock=clock, policy=policy, redaction=gate
    )
    scratchpad = ScratchpadService(
        store=stores.scratchpad,
        preferences=preferences,
        business=business,
        embedding=access,
        clock=clock,
        policy=policy,
        redaction=gate,
    )
    return KnowledgeServices(scratchpad=scratchpad, preferences=preferences, business=business)
