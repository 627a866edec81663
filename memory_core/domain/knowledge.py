"""Values of the cache hierarchy: scratchpad snippets, preferences, playbooks, documents."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum

from pydantic import JsonValue

from memory_core.domain.frozen import Frozen as _Frozen
from memory_core.domain.inputs import content_hash

__all__ = [
    "Chunk",
    "ChunkDraft",
    "DocumentDraft",
    "DocumentOrigin",
    "DocumentRecord",
    "Playbook",
    "PlaybookDraft",
    "Preference",
    "PreferenceDraft",
    "PromotionReason",
    "PromotionTarget",
    "Snippet",
    "SnippetDraft",
]


class PromotionTarget(StrEnum):
    """Where a scratchpad snippet can be promoted to."""

    PREFERENCES = "preferences"
    BUSINESS_CONTEXT = "business_context"


class PromotionReason(StrEnum):
    """Why a snippet was promoted."""

    EXPLICIT = "explicit"
    RECURRENCE = "recurrence"
    SALIENT = "salient"


class DocumentOrigin(StrEnum):
    """How a business document entered the store."""

    INGEST = "ingest"
    AGENT_MD = "agent_md"
    PROMOTED = "promoted"


class SnippetDraft(_Frozen):
    """A validated snippet about to be written."""

    session_id: str
    text: str
    norm_hash: str
    user: str | None
    tenant: str | None
    salient: bool
    promote_to: PromotionTarget | None


class Snippet(_Frozen):
    """A stored scratchpad snippet."""

    id: int
    session_id: str
    user: str | None
    tenant: str | None
    text: str
    norm_hash: str
    salient: bool
    promote_to: PromotionTarget | None
    created_at: datetime
    last_used_at: datetime
    use_count: int
    promoted_to: PromotionTarget | None
    promoted_ref: str | None
    promoted_reason: PromotionReason | None


class PreferenceDraft(_Frozen):
    """A validated rule about to be stored under (user, key)."""

    user: str
    key: str
    value: str
    flow_id: str | None
    origin: str


class Preference(_Frozen):
    """A rule for one user: `key` names it, `value` says how the agent should behave."""

    id: int
    user: str
    key: str
    value: str
    flow_id: str | None
    origin: str
    created_at: datetime
    updated_at: datetime


class PlaybookDraft(_Frozen):
    """A validated trajectory about to be recorded."""

    user: str
    flow: str
    user_query: str
    slots: dict[str, JsonValue]
    tool_calls: list[JsonValue]
    outcome: str
    record_hash: str


def playbook_hash(
    flow: str,
    user_query: str,
    slots: dict[str, JsonValue],
    tool_calls: list[JsonValue],
    outcome: str,
) -> str:
    """The identity of a trajectory: recording the same one twice stores it once.

    Computed from the stored (redacted) values, by `record_playbook` and by an import that
    redacted a row, so both agree on what "the same" is.
    """
    slots_json = json.dumps(slots, ensure_ascii=False, sort_keys=True)
    calls_json = json.dumps(tool_calls, ensure_ascii=False, sort_keys=True)
    identity = json.dumps([flow, user_query, slots_json, calls_json, outcome])
    return hashlib.sha256(identity.encode()).hexdigest()


class Playbook(_Frozen):
    """A successful trajectory: what was asked, which slots were filled, which tools ran."""

    id: int
    user: str
    flow: str
    user_query: str
    slots: dict[str, JsonValue]
    tool_calls: list[JsonValue]
    outcome: str
    created_at: datetime


class ChunkDraft(_Frozen):
    """A span of a document: `text` is `document[start:end]`."""

    position: int
    start: int
    end: int
    text: str


class Chunk(_Frozen):
    """A stored chunk, with the document it came from."""

    id: int
    tenant: str
    source: str
    position: int
    start: int
    end: int
    text: str


class DocumentDraft(_Frozen):
    """A validated document about to be stored: its text and chunks."""

    tenant: str
    source: str
    origin: DocumentOrigin
    text: str
    chunks: tuple[ChunkDraft, ...]

    @property
    def content_hash(self) -> str:
        """The hash of the text: a source stored with the same hash is left unchanged."""
        return content_hash(self.text)


class DocumentRecord(_Frozen):
    """A stored business document (its chunks are stored beside it)."""

    id: int
    tenant: str
    source: str
    origin: DocumentOrigin
    content_hash: str
    chunk_count: int
    char_count: int
    created_at: datetime
    updated_at: datetime
