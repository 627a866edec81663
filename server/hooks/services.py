"""The services a hook needs, on the configured store: a lighter composition than open_container.

A hook is a fresh process with a budget of a few hundred milliseconds, so it builds only what
its event uses: each service below (and the store and modules under it) is built at its first
use, so session-start never imports the memory service or the transcript recorder, and no hook
builds the knowledge services; the embedding model loads only when the prompt hook is allowed
to wait for it. Storage, migrations and the backend choice are shared with the server
(server.backends.open_backend), so hooks and server always agree on the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from memory_core.clock import SystemClock
from memory_core.ports import Clock
from memory_core.ports.hooks import HookSessionStore
from memory_core.ports.project_moves import ProjectMoves
from server.backends import Backend, open_backend
from server.settings import Settings

if TYPE_CHECKING:
    from memory_core.embeddings import LazyEmbedder
    from memory_core.services.conversations import ConversationService
    from memory_core.services.indexing import Indexer
    from memory_core.services.memories import MemoryService
    from memory_core.services.playbook_promotion import PlaybookPromotion
    from memory_core.services.session_start import SessionStartService
    from memory_core.services.transcripts import TranscriptRecorder

__all__ = ["HookServices", "open_hook_services"]


class HookServices:
    """What the four hooks use, each service built at its first use."""

    def __init__(
        self,
        settings: Settings,
        backend: Backend,
        *,
        embedder: LazyEmbedder | None,
        indexer: Indexer | None,
        recording: bool,
    ) -> None:
        self.settings = settings
        self.clock: Clock = SystemClock()
        self.embedder = embedder
        self._backend = backend
        self._indexer = indexer
        self._recording = recording

    @property
    def project_moves(self) -> ProjectMoves:
        """Moves of a folder-named project to its repository's name (server.project.adoption)."""
        return self._backend.project_moves

    @property
    def hook_sessions(self) -> HookSessionStore:
        """The per-session state of the hooks (cached start text, injected memories)."""
        return self._backend.hook_sessions

    @cached_property
    def memories(self) -> MemoryService:
        """Search and append memories (prompt recall, session summaries)."""
        from memory_core.services.memories import MemoryService

        # Without the model (a cold keyword search), versions of a fact are still folded and
        # ordered by the vectors the store holds: a correction must not lose to what it corrects.
        stored = None if self._indexer else self._backend.vectors(self.settings.vector_exact_max)
        return MemoryService(
            repo=self._backend.repo,
            clock=self.clock,
            limits=self.settings.limits,
            tiers=self.settings.tiers,
            ranking=self.settings.ranking,
            indexer=self._indexer,
            redaction=self.settings.redaction,
            stored_vectors=stored,
        )

    @cached_property
    def conversations(self) -> ConversationService:
        """Conversation memory: injected text noted as context, recorded transcripts.

        Recording hooks use the server's summarizer.
        """
        from memory_core.services.conversations import ConversationService

        settings = self.settings
        summarizer = None
        if self._recording:
            from server.container import _summarizer  # the server's summarizer endpoint

            summarizer = _summarizer(settings)
        return ConversationService(
            store=self._backend.conversations,
            clock=self.clock,
            policy=settings.conversation,
            summarizer=summarizer,
            redaction=settings.redaction,
        )

    @cached_property
    def start(self) -> SessionStartService:
        """The session-start context."""
        from memory_core.services.session_start import SessionStartService

        return SessionStartService(
            repo=self._backend.repo,
            clock=self.clock,
            tiers=self.settings.tiers,
            preferences=self._backend.preferences,
            hook_sessions=self._backend.hook_sessions,
        )

    @cached_property
    def playbooks(self) -> PlaybookPromotion:
        """Approved flows kept as the user's playbooks, and offered back as recipes."""
        from memory_core.domain.ranking import match_thresholds
        from memory_core.services.embedding_access import EmbeddingAccess
        from memory_core.services.playbook_promotion import PlaybookPromotion
        from memory_core.services.preferences import PreferenceService

        settings = self.settings
        match = match_thresholds(settings.ranking)
        # write_wait 0: a hook never waits for a model to embed a playbook; the server's
        # next find embeds what was stored without a vector.
        preferences = PreferenceService(
            preferences=self._backend.preferences,
            playbooks=self._backend.factories.playbooks(),
            embedding=EmbeddingAccess(source=self.embedder, write_wait=0.0),
            clock=self.clock,
            policy=settings.knowledge,
            redaction=settings.redaction,
            match=match,
        )
        return PlaybookPromotion(
            preferences=preferences,
            thresholds=match,
            hook_sessions=self._backend.hook_sessions,
            clock=self.clock,
        )

    @cached_property
    def recorder(self) -> TranscriptRecorder:
        """Transcripts into conversation memory, and the session's summary."""
        from memory_core.services.transcripts import TranscriptRecorder

        return TranscriptRecorder(
            conversations=self.conversations,
            memories=self.memories,
            hook_sessions=self._backend.hook_sessions,
            clock=self.clock,
            authors={
                "user": self.settings.hooks.user_name or "user",
                "assistant": self.settings.hooks.assistant_name or "assistant",
            },
        )


@asynccontextmanager
async def open_hook_services(
    settings: Settings, *, semantic: bool = False, recording: bool = False
) -> AsyncIterator[HookServices]:
    """Open the store and prepare the hook services (built when first used).

    Args:
        settings: The configuration.
        semantic: Start loading the embedding model (the prompt hook may wait for it).
        recording: Use the server's summarizer (transcript hooks).
    """
    async with open_backend(settings) as backend:
        embedder, indexer = None, None
        spec = settings.embedding
        if semantic and spec.kind != "none":
            from memory_core.embeddings import LazyEmbedder, load_embedder
            from memory_core.services.indexing import Indexer

            embedder = LazyEmbedder(
                lambda: load_embedder(spec), model_id=spec.model_id, dims=spec.dims
            )
            embedder.start()
            vectors = backend.vectors(settings.vector_exact_max)
            await vectors.ensure_model(embedder.model_id, embedder.dims)
            indexer = Indexer(vectors=vectors, source=embedder)
        yield HookServices(
            settings, backend, embedder=embedder, indexer=indexer, recording=recording
        )
