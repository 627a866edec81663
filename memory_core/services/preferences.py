"""User preferences (rules that change the agent's behaviour) and playbooks, per user."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from pydantic import JsonValue

from memory_core.domain.inputs import check_text
from memory_core.domain.knowledge import Playbook, PlaybookDraft, Preference
from memory_core.domain.knowledge_inputs import check_json_size, check_name, check_optional_name
from memory_core.domain.similarity import keyword_overlap
from memory_core.errors import InvalidInputError
from memory_core.knowledge_config import KnowledgePolicy
from memory_core.knowledge_ports import PlaybookStore, PreferenceStore
from memory_core.ports import Clock, Embedder
from memory_core.services.embedding_access import EmbeddingAccess, cosine

if TYPE_CHECKING:
    from memory_core.knowledge_ports import Vector

__all__ = [
    "FindResult",
    "Match",
    "PlaybookRecord",
    "PreferenceService",
    "PreferenceUpdate",
]


class _HasId(Protocol):
    @property
    def id(self) -> int: ...


T = TypeVar("T")
R = TypeVar("R", bound=_HasId)
_SetVectors = Callable[[Sequence[tuple[int, "Vector"]], str], Awaitable[None]]
MatchKind = Literal["flow", "semantic", "keyword"]
MAX_KEY_CHARS = 512
FIND_LIMIT_MAX = 50


@dataclass(frozen=True)
class Match(Generic[T]):
    """A found item, its score in [0, 1] and how it matched."""

    item: T
    score: float
    how: MatchKind


@dataclass(frozen=True)
class FindResult(Generic[T]):
    """Matches best first, the mode used, and notes for the client."""

    matches: list[Match[T]]
    mode: Literal["flow", "semantic", "keyword"]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PreferenceUpdate:
    """A stored rule and the value it replaced."""

    preference: Preference
    previous_value: str | None
    notes: list[str]


@dataclass(frozen=True)
class PlaybookRecord:
    """A recorded playbook; `created` is False when the same one was recorded before."""

    playbook: Playbook
    created: bool
    notes: list[str]


def _preference_text(p: Preference) -> str:
    return f"{p.key}: {p.value}"


def _check_limit(limit: int) -> int:
    if not 1 <= limit <= FIND_LIMIT_MAX:
        raise InvalidInputError("limit", f"must be between 1 and {FIND_LIMIT_MAX}")
    return limit


@dataclass
class PreferenceService:
    """Rules and playbooks of each user; a user's calls never read another user's rows."""

    preferences: PreferenceStore
    playbooks: PlaybookStore
    embedding: EmbeddingAccess
    clock: Clock
    policy: KnowledgePolicy

    async def _vector(self, text: str) -> tuple[Vector | None, str | None, list[str]]:
        embedder, why = await self.embedding.for_write()
        if embedder is None:
            return None, None, [f"{why}; stored without a vector (found by words only)."]
        vectors = await self.embedding.embed(embedder, [text])
        return vectors[0], embedder.model_id, []

    async def update(
        self,
        user: str,
        key: str,
        value: str,
        *,
        flow_id: str | None = None,
        origin: str = "client",
    ) -> PreferenceUpdate:
        """Set (or replace) the rule `key` of `user`.

        Raises:
            InvalidInputError: A field is empty, too long or badly formed; nothing is written.
        """
        user = check_name("user", user)
        key = check_text("key", key, max_chars=MAX_KEY_CHARS)
        value = check_text("value", value, max_chars=self.policy.max_value_chars)
        flow_id = check_optional_name("flow_id", flow_id)
        vector, model_id, notes = await self._vector(f"{key}: {value}")
        stored, previous = await self.preferences.upsert(
            user, key, value, flow_id, origin, vector, model_id, self.clock.now()
        )
        return PreferenceUpdate(preference=stored, previous_value=previous, notes=notes)

    async def get(self, user: str, key: str) -> Preference | None:
        """The rule `key` of `user`, or None."""
        return await self.preferences.get(
            check_name("user", user), check_text("key", key, max_chars=MAX_KEY_CHARS)
        )

    async def find(
        self, user: str, situation: str, *, flow_id: str | None = None, limit: int = 5
    ) -> FindResult[Preference]:
        """Rules of `user` that apply to a situation.

        Inside a known flow (rules recorded with this `flow_id`), those rules are the answer,
        exactly. Otherwise rules are ranked by cosine similarity between the situation and
        "key: value" (at least `preference_similarity`), or, without a model, by the share of
        the situation's words they contain (at least `keyword_overlap`).
        """
        user = check_name("user", user)
        situation = check_text("situation", situation, max_chars=self.policy.max_value_chars)
        flow_id = check_optional_name("flow_id", flow_id)
        limit = _check_limit(limit)
        embedder, why = await self.embedding.for_read()
        rows = await self.preferences.list_user(user, embedder.model_id if embedder else None)
        if flow_id is not None:
            in_flow = [Match(p, 1.0, "flow") for p, _ in rows if p.flow_id == flow_id]
            if in_flow:
                return FindResult(in_flow[:limit], "flow")
        notes = [] if flow_id is None else [f"No rules recorded for flow {flow_id!r}."]
        if embedder is None:
            return self._by_words(rows, situation, limit, [*notes, f"{why}; matched by words."])
        vectors = await self._fill_vectors(
            embedder, rows, _preference_text, self.preferences.set_vectors
        )
        query = (await self.embedding.embed(embedder, [situation]))[0]
        scored = [
            Match(p, round(cosine(query, v), 4), "semantic")
            for (p, _), v in zip(rows, vectors, strict=True)
        ]
        kept = [m for m in scored if m.score >= self.policy.preference_similarity]
        kept.sort(key=lambda m: (-m.score, m.item.id))
        return FindResult(kept[:limit], "semantic", notes)

    def _by_words(
        self,
        rows: Sequence[tuple[Preference, Vector | None]],
        situation: str,
        limit: int,
        notes: list[str],
    ) -> FindResult[Preference]:
        scored = [
            Match(p, round(keyword_overlap(situation, _preference_text(p)), 4), "keyword")
            for p, _ in rows
        ]
        kept = [m for m in scored if m.score >= self.policy.keyword_overlap]
        kept.sort(key=lambda m: (-m.score, m.item.id))
        return FindResult(kept[:limit], "keyword", notes)

    async def _fill_vectors(
        self,
        embedder: Embedder,
        rows: Sequence[tuple[R, Vector | None]],
        text_of: Callable[[R], str],
        store: _SetVectors,
    ) -> list[Vector]:
        """Vectors of every row, embedding (and storing) those written without one.

        Trigger: rows written while no model was loaded (or under another model). Why: they
        would never be found by meaning. Outcome: the first search that can embeds them.
        """
        missing = [i for i, (_, v) in enumerate(rows) if v is None]
        out: list[Vector | None] = [v for _, v in rows]
        if missing:
            fresh = await self.embedding.embed(embedder, [text_of(rows[i][0]) for i in missing])
            for j, i in enumerate(missing):
                out[i] = fresh[j]
            ids = [rows[i][0].id for i in missing]
            await store(list(zip(ids, fresh, strict=True)), embedder.model_id)
        return [v for v in out if v is not None]

    async def record_playbook(
        self,
        user: str,
        flow: str,
        slots: dict[str, JsonValue],
        tool_calls: list[JsonValue],
        outcome: str,
        user_query: str,
    ) -> PlaybookRecord:
        """Store a successful trajectory of `user`, indexed by the meaning of `user_query`.

        Raises:
            InvalidInputError: A field is empty, too long or badly formed; nothing is written.
        """
        limit = self.policy.max_value_chars
        user = check_name("user", user)
        flow = check_name("flow", flow)
        user_query = check_text("user_query", user_query, max_chars=limit)
        outcome = check_text("outcome", outcome, max_chars=limit)
        slots_json = check_json_size("slots", slots, max_chars=limit)
        calls_json = check_json_size("tool_calls", tool_calls, max_chars=limit)
        identity = json.dumps([flow, user_query, slots_json, calls_json, outcome])
        draft = PlaybookDraft(
            user=user,
            flow=flow,
            user_query=user_query,
            slots=slots,
            tool_calls=tool_calls,
            outcome=outcome,
            record_hash=hashlib.sha256(identity.encode()).hexdigest(),
        )
        vector, model_id, notes = await self._vector(user_query)
        stored, created = await self.playbooks.add(draft, vector, model_id, self.clock.now())
        return PlaybookRecord(playbook=stored, created=created, notes=notes)

    async def find_playbooks(
        self, user: str, query: str, *, flow: str | None = None, limit: int = 5
    ) -> FindResult[Playbook]:
        """Playbooks of `user` whose recorded query means what `query` means.

        Only playbooks at or above `playbook_similarity` (cosine) are returned, best first;
        without a model, those holding at least `keyword_overlap` of the query's words.
        """
        user = check_name("user", user)
        query = check_text("query", query, max_chars=self.policy.max_value_chars)
        flow = check_optional_name("flow", flow)
        limit = _check_limit(limit)
        embedder, why = await self.embedding.for_read()
        rows = await self.playbooks.list_user(user, flow, embedder.model_id if embedder else None)
        if embedder is None:
            scored = [
                Match(p, round(keyword_overlap(query, p.user_query), 4), "keyword") for p, _ in rows
            ]
            kept = [m for m in scored if m.score >= self.policy.keyword_overlap]
            kept.sort(key=lambda m: (-m.score, -m.item.id))
            return FindResult(kept[:limit], "keyword", [f"{why}; matched by words."])
        vectors = await self._fill_vectors(
            embedder, rows, lambda p: p.user_query, self.playbooks.set_vectors
        )
        vector = (await self.embedding.embed(embedder, [query]))[0]
        matches = [
            Match(p, round(cosine(vector, v), 4), "semantic")
            for (p, _), v in zip(rows, vectors, strict=True)
        ]
        kept = [m for m in matches if m.score >= self.policy.playbook_similarity]
        kept.sort(key=lambda m: (-m.score, -m.item.id))
        return FindResult(kept[:limit], "semantic")
