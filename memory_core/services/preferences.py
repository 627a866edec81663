"""User preferences (rules that change the agent's behaviour) and playbooks, per user."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from pydantic import JsonValue

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.config.policies import RankingPolicy
from memory_core.domain.fts_query import search_words
from memory_core.domain.inputs import check_text
from memory_core.domain.knowledge import (
    Playbook,
    PlaybookDraft,
    Preference,
    PreferenceDraft,
    playbook_hash,
)
from memory_core.domain.knowledge_inputs import check_json_size, check_name, check_optional_name
from memory_core.domain.match import Match, MatchThresholds, match_strength, word_share
from memory_core.domain.ranking import match_thresholds
from memory_core.domain.redaction import RedactionPolicy, Redactor, redact_key
from memory_core.errors import ConfirmationRequiredError, InvalidInputError
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
# How an item was found: its flow, by meaning, or by words (no model).
MatchKind = Literal["flow", "semantic", "keyword"]
MAX_KEY_CHARS = 512
FIND_LIMIT_MAX = 50
MAX_DELETE_ITEMS = 1_000


@dataclass(frozen=True)
class Found(Generic[T]):
    """A found item, its score, how it was found and how well it matches (absolute).

    `score` is the cosine to the query (the share of its words without a model; 1.0 for a
    rule of the flow asked for). `match` is weak for an item under the cut, returned only
    because the user has few items.
    """

    item: T
    score: float
    how: MatchKind
    match: Match


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


def default_match() -> MatchThresholds:
    """The match bands of memory search (RankingPolicy's defaults): one scale for every hit."""
    return match_thresholds(RankingPolicy())


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
    # The bands of memory search (settings.ranking's match_*), which playbooks use as they are
    # (a request against a request, embedded by the same model, as the hooks' recipes do) and
    # rules with their own calibrated cut (`_rule_bands`).
    match: MatchThresholds = field(default_factory=default_match)

    def _rule_bands(self) -> MatchThresholds:
        """Rules: partial from `preference_similarity`, calibrated on rules.

        0.25 with MiniLM (docs/benchmarks.md, preference matching): a rule is short and
        imperative, so one that applies scores lower against a situation than a memory does.
        """
        return MatchThresholds(
            strong_cosine=self.match.strong_cosine,
            partial_cosine=self.policy.preference_similarity,
            strong_words=self.match.strong_words,
            partial_words=self.policy.keyword_overlap,
        )

    def _playbook_bands(self) -> MatchThresholds:
        """Playbooks: memory search's bands; by words, partial from `keyword_overlap`."""
        return MatchThresholds(
            strong_cosine=self.match.strong_cosine,
            partial_cosine=self.match.partial_cosine,
            strong_words=self.match.strong_words,
            partial_words=self.policy.keyword_overlap,
        )

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
        """Rules of `user` that apply to a situation, strongest first.

        Inside a known flow (rules recorded with this `flow_id`), those rules are the answer,
        exactly (strong). Otherwise each rule is scored by the cosine between the situation
        and "key: value" (without a model, the share of the situation's words it holds) and
        banded strong, partial or weak (`_rule_bands`); weak rules are left out unless the
        user has few (`_cut`).
        """
        user = check_name("user", user)
        situation = check_text("situation", situation, max_chars=self.policy.max_value_chars)
        flow_id = check_optional_name("flow_id", flow_id)
        limit = _check_limit(limit)
        embedder, why = await self.embedding.for_read()
        rows = await self.preferences.list_user(user, embedder.model_id if embedder else None)
        if flow_id is not None:
            in_flow = [Found(p, 1.0, "flow", Match.STRONG) for p, _ in rows if p.flow_id == flow_id]
            if in_flow:
                return FindResult(in_flow[:limit], "flow")
        notes = [] if flow_id is None else [f"No rules recorded for flow {flow_id!r}."]
        items = [p for p, _ in rows]
        cosines: list[float] | None = None
        if embedder is None:
            notes.append(f"{why}; matched by words.")
        else:
            vectors = await self._fill_vectors(
                embedder, rows, _preference_text, self.preferences.set_vectors
            )
            query = (await self.embedding.embed(embedder, [situation]))[0]
            cosines = [cosine(query, v) for v in vectors]
        scored = _banded(items, cosines, situation, _preference_text, self._rule_bands())
        mode: Literal["semantic", "keyword"] = "semantic" if embedder else "keyword"
        return _cut(scored, limit, mode, notes, self.policy.preference_rank_all_max)

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
        """Playbooks of `user` for a flow, or whose recorded request means what `query` means.

        Each playbook is scored by the cosine of its request to `query` (without a model, the
        share of the query's words it holds) and banded strong, partial or weak on memory
        search's scale (`_playbook_bands`). With `flow`, that flow's playbooks are the answer,
        exactly (how "flow"): strongest first, never cut, none from other flows. Without it,
        as rules (`_cut`): weak ones are left out unless the user has few playbooks.
        """
        user = check_name("user", user)
        query = check_text("query", query, max_chars=self.policy.max_value_chars)
        flow = check_optional_name("flow", flow)
        limit = _check_limit(limit)
        embedder, why = await self.embedding.for_read()
        rows = await self.playbooks.list_user(user, flow, embedder.model_id if embedder else None)
        notes = [] if embedder is not None else [f"{why}; ranked by words."]
        ranked = await self._rank_playbooks(embedder, rows, query)
        if flow is not None:
            if not ranked:
                notes.insert(0, f"No playbooks recorded for flow {flow!r}.")
            exact = [Found(m.item, m.score, "flow", m.match) for m in ranked]
            return FindResult(exact[:limit], "flow", notes)
        mode: Literal["semantic", "keyword"] = "semantic" if embedder else "keyword"
        return _cut(ranked, limit, mode, notes, self.policy.preference_rank_all_max, "playbook")

    async def _rank_playbooks(
        self,
        embedder: Embedder | None,
        rows: Sequence[tuple[Playbook, Vector | None]],
        query: str,
    ) -> list[Found[Playbook]]:
        """Playbooks scored and banded against `query`, strongest, then best, then newest."""
        cosines: list[float] | None = None
        if embedder is not None:
            vectors = await self._fill_vectors(
                embedder, rows, lambda p: p.user_query, self.playbooks.set_vectors
            )
            vector = (await self.embedding.embed(embedder, [query]))[0]
            cosines = [cosine(vector, v) for v in vectors]
        items = [p for p, _ in rows]
        return _banded(items, cosines, query, lambda p: p.user_query, self._playbook_bands())


def _banded(
    items: Sequence[R],
    cosines: Sequence[float] | None,
    query: str,
    text_of: Callable[[R], str],
    bands: MatchThresholds,
) -> list[Found[R]]:
    """Items scored against `query` and banded: strongest first, then by score, then newest.

    With `cosines` (one per item) the score is the cosine; without (no model), the share of
    the query's words the item holds. Either way the band also counts the query's words the
    item holds, as memory search's does (domain.match).
    """
    words = search_words(query, drop_stopwords=True)
    found: list[Found[R]] = []
    for n, item in enumerate(items):
        share = word_share(words, text_of(item))
        if cosines is None:
            band = match_strength(None, share, bands)
            found.append(Found(item, round(share, 4), "keyword", band))
        else:
            band = match_strength(cosines[n], share, bands)
            found.append(Found(item, round(cosines[n], 4), "semantic", band))
    found.sort(key=lambda m: (-m.match.order, -m.score, -m.item.id))
    return found


def _cut(
    scored: list[Found[R]],
    limit: int,
    mode: Literal["semantic", "keyword"],
    notes: list[str],
    rank_all_max: int,
    noun: str = "rule",
) -> FindResult[R]:
    """The strong and partial matches, best first; the weak ones too when the user has few.

    Trigger: a rule such as "Use metric units." scores cosine 0.11 against "how far is it
    from Paris to Berlin", under any cut that keeps noise out; "ship the app to the test
    server" scored 0.53 against the playbook of "deploy the web app to staging", under
    playbook_find's former 0.6 cut. Why: a user has few rules and playbooks, and a model
    reading all of them ranked decides better than a threshold returning none. Outcome: up
    to `rank_all_max` items come back ranked, those under the cut marked weak, and said so.
    """
    if not 0 < len(scored) <= rank_all_max:
        return FindResult([m for m in scored if m.match is not Match.WEAK][:limit], mode, notes)
    shown = scored[:limit]
    if any(m.match is Match.WEAK for m in shown):
        plural = "" if len(scored) == 1 else "s"
        notes.append(
            f"This user has {len(scored)} {noun}{plural}, so all are ranked; weak ones matched "
            "under the cut: follow one only if it fits."
        )
    return FindResult(shown, mode, notes)
