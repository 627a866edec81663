"""The interfaces services depend on, one module per feature; storage backends implement them.

- `memories`: MemoryRepository, VectorIndex, KeywordSearch, the embedder and the clock;
- `conversations`: ConversationStore, Summarizer, TokenCounter;
- `knowledge`: the scratchpad, preference, playbook and document stores;
- `transfer`: whole-row export/import and backups;
- `hooks`: the Claude Code hook sessions.

This package re-exports every port so callers can write `from memory_core.ports import X`.
The names load on first use (PEP 562), like `memory_core`'s own: the hooks import one port
module and must not pay for the others' domain models.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core.ports.conversations import (
        ConversationStore,
        FoldFn,
        SessionNotes,
        Summarizer,
        TokenCounter,
    )
    from memory_core.ports.hooks import HookSessionStore
    from memory_core.ports.knowledge import (
        DocumentStore,
        DocumentWrite,
        EmbeddingProvider,
        PlaybookStore,
        PreferenceStore,
        ScratchpadStore,
        SnippetWrite,
    )
    from memory_core.ports.memories import (
        Clock,
        Embedder,
        EmbedderSource,
        KeywordSearch,
        MemoryRepository,
        VectorIndex,
    )
    from memory_core.ports.transfer import BackupReport, ImportCounts, MemoryTransfer, Progress

_HOMES = {
    "Clock": "memories",
    "Embedder": "memories",
    "EmbedderSource": "memories",
    "KeywordSearch": "memories",
    "MemoryRepository": "memories",
    "VectorIndex": "memories",
    "ConversationStore": "conversations",
    "FoldFn": "conversations",
    "SessionNotes": "conversations",
    "Summarizer": "conversations",
    "TokenCounter": "conversations",
    "DocumentStore": "knowledge",
    "DocumentWrite": "knowledge",
    "EmbeddingProvider": "knowledge",
    "PlaybookStore": "knowledge",
    "PreferenceStore": "knowledge",
    "ScratchpadStore": "knowledge",
    "SnippetWrite": "knowledge",
    "BackupReport": "transfer",
    "ImportCounts": "transfer",
    "MemoryTransfer": "transfer",
    "Progress": "transfer",
    "HookSessionStore": "hooks",
}

__all__ = [
    "BackupReport",
    "Clock",
    "ConversationStore",
    "DocumentStore",
    "DocumentWrite",
    "Embedder",
    "EmbedderSource",
    "EmbeddingProvider",
    "FoldFn",
    "HookSessionStore",
    "ImportCounts",
    "KeywordSearch",
    "MemoryRepository",
    "MemoryTransfer",
    "PlaybookStore",
    "PreferenceStore",
    "Progress",
    "ScratchpadStore",
    "SessionNotes",
    "SnippetWrite",
    "Summarizer",
    "TokenCounter",
    "VectorIndex",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_core.ports' has no attribute {name!r}")
    return getattr(import_module(f"memory_core.ports.{home}"), name)
