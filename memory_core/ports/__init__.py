"""The interfaces services depend on, one module per feature; storage backends implement them.

- `embeddings`: the embedder, its source (a model that may still be loading), the token
  counter and `Vector`;
- `memories`: MemoryRepository, VectorIndex, KeywordSearch, JobLeases and the clock;
- `conversations`: ConversationStore, Summarizer;
- `knowledge`: the scratchpad, preference, playbook and document stores;
- `transfer`: whole-row export/import, backups and copies between backends;
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
    )
    from memory_core.ports.embeddings import (
        Embedder,
        EmbedderSource,
    )
    from memory_core.ports.hooks import HookSessionStore
    from memory_core.ports.knowledge import (
        DocumentStore,
        DocumentWrite,
        PlaybookStore,
        PreferenceStore,
        ScratchpadStore,
        SnippetWrite,
    )
    from memory_core.ports.memories import (
        Clock,
        JobLeases,
        KeywordSearch,
        MemoryRepository,
        VectorIndex,
    )
    from memory_core.ports.transfer import (
        BackupReport,
        CopyEndpoint,
        CopyRow,
        ImportCounts,
        MemoryTransfer,
        Progress,
    )

_HOMES = {
    "Clock": "memories",
    "JobLeases": "memories",
    "Embedder": "embeddings",
    "EmbedderSource": "embeddings",
    "KeywordSearch": "memories",
    "MemoryRepository": "memories",
    "VectorIndex": "memories",
    "ConversationStore": "conversations",
    "FoldFn": "conversations",
    "SessionNotes": "conversations",
    "Summarizer": "conversations",
    "DocumentStore": "knowledge",
    "DocumentWrite": "knowledge",
    "PlaybookStore": "knowledge",
    "PreferenceStore": "knowledge",
    "ScratchpadStore": "knowledge",
    "SnippetWrite": "knowledge",
    "BackupReport": "transfer",
    "ImportCounts": "transfer",
    "MemoryTransfer": "transfer",
    "Progress": "transfer",
    "CopyEndpoint": "transfer",
    "CopyRow": "transfer",
    "HookSessionStore": "hooks",
}

__all__ = [
    "BackupReport",
    "Clock",
    "ConversationStore",
    "CopyEndpoint",
    "CopyRow",
    "DocumentStore",
    "DocumentWrite",
    "Embedder",
    "EmbedderSource",
    "FoldFn",
    "HookSessionStore",
    "ImportCounts",
    "JobLeases",
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
    "VectorIndex",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_core.ports' has no attribute {name!r}")
    return getattr(import_module(f"memory_core.ports.{home}"), name)
