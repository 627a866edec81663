"""User preferences (rules that change the agent's behaviour) and playbooks, per user."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from pydantic import JsonValue

from memory_core.domain.inputs import check_text
from memory_core.domain.knowledge import (
    Playbook,
    PlaybookDraft,
    Preference,
    PreferenceDraft,
    playbook_hash,
)
from memory_core.domain.knowledge_inputs import check_json_size, check_name, check_optional_name
from memory_core.domain.redaction import RedactionPolicy, Redactor, redact_key
from memory_core.domain.similarity import keyword_overlap
from memory_core.errors import ConfirmationRequiredError, InvalidInputError
from memory_core.knowledge_config import KnowledgePolicy
from memory_core.ports import Clock, Embedder
from memory_core.ports.knowledge import PlaybookStore, PreferenceStore
from memory_core.services.embedding_access import EmbeddingAccess, cosine

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = [
    "Deleted",
    "FindResult",
    "Found",
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
# "weak": under the similarity cut, returned only because the user has few rules.
MatchKind = Literal["flow", "semantic", "keyword", "weak"]
MAX_KEY_CHARS = 512
FIND_LIMIT_MAX = 50
MAX_DELETE_ITEMS = 1_000


@dataclass(frozen=True)
class Found(Generic[T]):
    """A found item, its score in [0, 1] and how it matched."""

    item: T
    score: float
    how: MatchKind


@dataclass(frozen=True)
class FindResult(Generic[T]):
    """Matches best first, the mode used, and notes for the client."""

    matches: list[Found[T]]
    mode: Literal["flow", "semantic", "keyword"]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PreferenceUpdate:
    """A stored rule and the value it replaced."""

    preference: Preference
    previous_value: str | None
    notes: list[str]
    redacted: dict[str, int] = field(default_factory=dict)  # credentials taken out, by kind


@dataclass(frozen=True)
class PlaybookRecord:
    """A recorded playbook; `created` is False when the same one was recorded before.

    `replaced`: the flow had a playbook, which this one replaced (one_per_flow).
    """

    playbook: Playbook
    created: bool
    notes: list[str]
    redacted: dict[str, int] = field(default_factory=dict)  # credentials taken out, by kind
    replaced: bool = False


@dataclass(frozen=True)
class Deleted:
    """What a delete removed: rule keys and playbook ids."""

    keys: list[str]
    playbook_ids: list[int]


def check_items(field_name: str, items: Sequence[T] | None) -> Sequence[T] | None:
    """A list of names or ids to delete, at most MAX_DELETE_ITEMS long."""
    if items is not None and len(items) > MAX_DELETE_ITEMS:
        raise InvalidInputError(field_name, f"must hold at most {MAX_DELETE_ITEMS} items")
    return items


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
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)

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
        gate = Redactor(self.redaction)
        key = gate.key(check_text("key", key, max_chars=MAX_KEY_CHARS))
        value = gate.text(check_text("value", value, max_chars=self.policy.max_value_chars))
        flow_id = check_optional_name("flow_id", flow_id)
        vector, model_id, notes = await self._vector(f"{key}: {value}")
        draft = PreferenceDraft(user=user, key=key, value=value, flow_id=flow_id, origin=origin)
        stored, previous = await self.preferences.upsert(draft, vector, model_id, self.clock.now())
        return PreferenceUpdate(
            preference=stored, previous_value=previous, notes=notes, redacted=gate.counts()
        )

    async def get(self, user: str, key: str) -> Preference | None:
        """The rule `key` of `user`, or None."""
        key = check_text("key", key, max_chars=MAX_KEY_CHARS)
        # Redacted the way `update` stored it, so a key holding a secret finds its rule.
        return await self.preferences.get(
            check_name("user", user), redact_key(key, self.redaction)[0]
        )

    async def list_all(self, user: str) -> tuple[list[Preference], list[Playbook]]:
        """Every rule (by key) and playbook (oldest first) of `user`: what a person reviews."""
        user = check_name("user", user)
        rules = await self.preferences.list_user(user, None)
        playbooks = await self.playbooks.list_user(user, None, None)
        return [p for p, _ in rules], [p for p, _ in playbooks]

    async def delete(
        self,
        user: str,
        *,
        keys: Sequence[str] | None = None,
        playbook_ids: Sequence[int] | None = None,
        confirm: bool = False,
    ) -> Deleted:
        """Delete rules by key and playbooks by id; with neither, everything of `user`.

        Raises:
            ConfirmationRequiredError: Everything of the user was asked for without `confirm`.
            InvalidInputError: A field is badly formed; nothing is deleted.
        """
        user = check_name("user", user)
        keys = check_items("keys", keys)
        playbook_ids = check_items("playbook_ids", playbook_ids)
        if keys is not None:
            keys = [
                redact_key(check_text("keys", k, max_chars=MAX_KEY_CHARS), self.redaction)[0]
                for k in keys
            ]
        if keys is None and playbook_ids is None:
            if not confirm:
                raise ConfirmationRequiredError("deleting every rule and playbook of a user")
            return Deleted(
                keys=await self.preferences.delete(user, None),
                playbook_ids=await self.playbooks.delete(user, None),
            )
        return Deleted(
            keys=await self.preferences.delete(user, keys) if keys else [],
            playbook_ids=await self.playbooks.delete(user, playbook_ids) if playbook_ids else [],
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
            in_flow = [Found(p, 1.0, "flow") for p, _ in rows if p.flow_id == flow_id]
            if in_flow:
                return FindResult(in_flow[:limit], "flow")
        notes = [] if flow_id is None else [f"No rules recorded for flow {flow_id!r}."]
        if embedder is None:
            scored = [
                Found(p, round(keyword_overlap(situation, _preference_text(p)), 4), "keyword")
                for p, _ in rows
            ]
            notes.append(f"{why}; matched by words.")
            return self._cut(scored, self.policy.keyword_overlap, limit, "keyword", notes)
        vectors = await self._fill_vectors(
            embedder, rows, _preference_text, self.preferences.set_vectors
        )
        query = (await self.embedding.embed(embedder, [situation]))[0]
        scored = [
            Found(p, round(cosine(query, v), 4), "semantic")
            for (p, _), v in zip(rows, vectors, strict=True)
        ]
        return self._cut(scored, self.policy.preference_similarity, limit, "semantic", notes)

    def _cut(
        self,
        scored: list[Found[Preference]],
        cut: float,
        limit: int,
        mode: Literal["semantic", "keyword"],
        notes: list[str],
    ) -> FindResult[Preference]:
        """The matches at or above `cut`, best first; all of them when the user has few rules.

        Trigger: a rule such as "Use metric units." scores cosine 0.11 against "how far is it
        from Paris to Berlin", under any cut that keeps noise out. Why: a user has few rules,
        and a model reading all of them ranked decides better than a threshold returning none.
        Outcome: up to `preference_rank_all_max` rules come back ranked, those under the cut
        marked "weak".
        """
        scored.sort(key=lambda m: (-m.score, m.item.id))
        if not 0 < len(scored) <= self.policy.preference_rank_all_max:
            return FindResult([m for m in scored if m.score >= cut][:limit], mode, notes)
        shown = [m if m.score >= cut else Found(m.item, m.score, "weak") for m in scored][:limit]
        if any(m.how == "weak" for m in shown):
            notes.append(
                f"This user has {len(scored)} rules, so all are ranked; match=weak scored "
                f"under {cut}: follow one only if it fits the situation."
            )
        return FindResult(shown, mode, notes)

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
        *,
        one_per_flow: bool = False,
    ) -> PlaybookRecord:
        """Store a successful trajectory of `user`, indexed by the meaning of `user_query`.

        `one_per_flow`: the flow holds one playbook; recording it again with other steps or
        another outcome replaces that playbook (`replaced`: a new id, the old one deleted)
        instead of adding a second.

        Raises:
            InvalidInputError: A field is empty, too long or badly formed; nothing is written.
        """
        limit = self.policy.max_value_chars
        user = check_name("user", user)
        flow = check_name("flow", flow)
        gate = Redactor(self.redaction)
        user_query = gate.text(check_text("user_query", user_query, max_chars=limit))
        outcome = gate.text(check_text("outcome", outcome, max_chars=limit))
        check_json_size("slots", slots, max_chars=limit)
        check_json_size("tool_calls", tool_calls, max_chars=limit)
        slots = gate.mapping(slots)
        redacted_calls = gate.json(list(tool_calls))
        assert isinstance(redacted_calls, list)  # a list stays a list
        tool_calls = redacted_calls
        # Sizes are checked before redaction (a marker can be longer than a short secret).
        draft = PlaybookDraft(
            user=user,
            flow=flow,
            user_query=user_query,
            slots=slots,
            tool_calls=tool_calls,
            outcome=outcome,
            record_hash=playbook_hash(flow, user_query, slots, tool_calls, outcome),
        )
        if one_per_flow and (same := await self._same_in_flow(draft)) is not None:
            return same
        vector, model_id, notes = await self._vector(user_query)
        stored, created = await self.playbooks.add(draft, vector, model_id, self.clock.now())
        replaced = False
        if one_per_flow and created:
            # The flow's older playbooks go once the new one is in: one playbook per flow.
            older = [p.id for p, _ in await self.playbooks.list_user(user, flow, None)]
            older = [i for i in older if i != stored.id]
            replaced = bool(older and await self.playbooks.delete(user, older))
        return PlaybookRecord(
            playbook=stored,
            created=created and not replaced,
            notes=notes,
            redacted=gate.counts(),
            replaced=replaced,
        )

    async def _same_in_flow(self, draft: PlaybookDraft) -> PlaybookRecord | None:
        """The flow's playbook when it already holds exactly `draft` (nothing to write).

        Trigger: a flow promoted again (a transcript read twice). Why: embedding the request
        and rewriting the row would change nothing. Outcome: the stored playbook, not created.
        """
        for old, _ in await self.playbooks.list_user(draft.user, draft.flow, None):
            stored_hash = playbook_hash(
                old.flow, old.user_query, old.slots, old.tool_calls, old.outcome
            )
            if stored_hash == draft.record_hash:
                return PlaybookRecord(playbook=old, created=False, notes=[])
        return None

    async def find_playbooks(
        self, user: str, query: str, *, flow: str | None = None, limit: int = 5
    ) -> FindResult[Playbook]:
        """Playbooks of `user` for a flow, or whose recorded query means what `query` means.

        With `flow`, that flow's playbooks are the answer, exactly (match "flow"): ranked by
        similarity to `query`, never cut, and none from other flows. Without it, only
        playbooks at or above `playbook_similarity` (cosine) are returned, best first; without
        a model, those holding at least `keyword_overlap` of the query's words.
        """
        user = check_name("user", user)
        query = check_text("query", query, max_chars=self.policy.max_value_chars)
        flow = check_optional_name("flow", flow)
        limit = _check_limit(limit)
        embedder, why = await self.embedding.for_read()
        rows = await self.playbooks.list_user(user, flow, embedder.model_id if embedder else None)
        notes = [] if embedder is not None else [f"{why}; ranked by words."]
        if flow is not None:
            ranked = await self._rank_playbooks(embedder, rows, query)
            if not ranked:
                notes.insert(0, f"No playbooks recorded for flow {flow!r}.")
            exact = [Found(m.item, m.score, "flow") for m in ranked]
            return FindResult(exact[:limit], "flow", notes)
        ranked = await self._rank_playbooks(embedder, rows, query)
        cut = self.policy.playbook_similarity if embedder else self.policy.keyword_overlap
        kept = [m for m in ranked if m.score >= cut]
        return FindResult(kept[:limit], "semantic" if embedder else "keyword", notes)

    async def _rank_playbooks(
        self,
        embedder: Embedder | None,
        rows: Sequence[tuple[Playbook, Vector | None]],
        query: str,
    ) -> list[Found[Playbook]]:
        """Playbooks scored against `query` (cosine, else word overlap), best then newest first."""
        if embedder is None:
            scored = [
                Found(p, round(keyword_overlap(query, p.user_query), 4), "keyword") for p, _ in rows
            ]
        else:
            vectors = await self._fill_vectors(
                embedder, rows, lambda p: p.user_query, self.playbooks.set_vectors
            )
            vector = (await self.embedding.embed(embedder, [query]))[0]
            scored = [
                Found(p, round(cosine(vector, v), 4), "semantic")
                for (p, _), v in zip(rows, vectors, strict=True)
            ]
        scored.sort(key=lambda m: (-m.score, -m.item.id))
        return scored
