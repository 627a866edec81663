"""The services a hook needs, on the configured store: a lighter composition than open_container.

A hook is a fresh process with a budget of a few hundred milliseconds, so it builds only what
its event uses: no knowledge services, and the embedding model only when the prompt hook is
allowed to wait for it. Storage, migrations and the backend choice are shared with the server
(server.backends.open_backend), so hooks and server always agree on the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from memory_core.clock import SystemClock
from memory_core.embeddings import LazyEmbedder, load_embedder
from memory_core.ports import Clock
from memory_core.ports.hooks import HookSessionStore
from memory_core.services.conversations import ConversationService
from memory_core.services.indexing import Indexer
from memory_core.services.memories import MemoryService
from memory_core.services.session_start import SessionStartService
from memory_core.services.transcripts import TranscriptRecorder
from server.backends import open_backend
from server.settings import Settings

__all__ = ["HookServices", "open_hook_services"]


@dataclass(frozen=True)
class HookServices:
    """What the four hooks use."""

    settings: Settings
    clock: Clock
    memories: MemoryService
    conversations: ConversationService
    start: SessionStartService
    recorder: TranscriptRecorder
    hook_sessions: HookSessionStore
    embedder: LazyEmbedder | None


@asynccontextmanager
async def open_hook_services(
    settings: Settings, *, semantic: bool = False, recording: bool = False
) -> AsyncIterator[HookServices]:
    """Open the store and build the hook services.

    Args:
        settings: The configuration.
        semantic: Start loading the embedding model (the prompt hook may wait for it).
        recording: Use the server's summarizer (transcript hooks).
    """
    clock = SystemClock()
    async with open_backend(settings) as backend:
        embedder, indexer = None, None
        spec = settings.embedding
        if semantic and spec.kind != "none":
            embedder = LazyEmbedder(
                lambda: load_embedder(spec), model_id=spec.model_id, dims=spec.dims
            )
            embedder.start()
            vectors = backend.vectors(settings.vector_exact_max)
            await vectors.ensure_model(embedder.model_id, embedder.dims)
            indexer = Indexer(vectors=vectors, source=embedder)
        memories = MemoryService(
            repo=backend.repo,
            clock=clock,
            limits=settings.limits,
            tiers=settings.tiers,
            ranking=settings.ranking,
            indexer=indexer,
            redaction=settings.redaction,
        )
        summarizer = None
        if recording:
            from server.container import _summarizer  # the server's summarizer endpoint

            summarizer = _summarizer(settings)
        conversations = ConversationService(
            store=backend.conversations,
            clock=clock,
            policy=settings.conversation,
            summarizer=summarizer,
            redaction=settings.redaction,
        )
        start = SessionStartService(
            repo=backend.repo,
            clock=clock,
            tiers=settings.tiers,
            preferences=backend.knowledge.preferences,
            hook_sessions=backend.hook_sessions,
        )
        recorder = TranscriptRecorder(
            conversations=conversations,
            memories=memories,
            hook_sessions=backend.hook_sessions,
            clock=clock,
        )
        yield HookServices(
            settings=settings,
            clock=clock,
            memories=memories,
            conversations=conversations,
            start=start,
            recorder=recorder,
            hook_sessions=backend.hook_sessions,
            embedder=embedder,
        )
