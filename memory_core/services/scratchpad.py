"""The session scratchpad: capped LRU snippets, and their promotion to longer-lived tiers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.inputs import check_text
from memory_core.domain.knowledge import (
    DocumentOrigin,
    Playbook,
    PromotionReason,
    PromotionTarget,
    Snippet,
    SnippetDraft,
)
from memory_core.domain.knowledge_inputs import (
    check_name,
    check_optional_name,
    check_session_id,
)
from memory_core.domain.redaction import RedactionPolicy, Redactor
from memory_core.domain.similarity import normalised_hash
from memory_core.errors import ConfirmationRequiredError, InvalidInputError, NotFoundError
from memory_core.ports import Clock
from memory_core.ports.knowledge import ScratchpadStore
from memory_core.services.business import BusinessService
from memory_core.services.embedding_access import EmbeddingAccess, cosine
from memory_core.services.preferences import MAX_KEY_CHARS, PreferenceService, check_items

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

__all__ = ["Promotion", "ScratchpadService", "ScratchpadWrite"]

MAX_READ_IDS = 1_000


@dataclass(frozen=True)
class Promotion:
    """Where a snippet went: a preference key of a user, or a document source of a tenant."""

    target: PromotionTarget
    ref: str
    owner: str
    reason: PromotionReason


@dataclass(frozen=True)
class ScratchpadWrite:
    """What a write did: the snippet, what it evicted, and any promotion it triggered."""

    snippet: Snippet
    created: bool
    evicted: list[Snippet]
    occurrences: int  # sessions (flows) holding this snippet or a near-duplicate of it
    promotion: Promotion | None
    notes: list[str] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)  # credentials taken out, by kind


def _default_target(user: str | None, tenant: str | None) -> PromotionTarget | None:
    if user is not None:
        return PromotionTarget.PREFERENCES
    if tenant is not None:
        return PromotionTarget.BUSINESS_CONTEXT
    return None


@dataclass
class ScratchpadService:
    """Snippets per session; promotion copies one into preferences or business context.

    A promoted snippet records its destination; the copy is independent, so evicting the
    snippet afterwards loses nothing.
    """

    store: ScratchpadStore
    preferences: PreferenceService
    business: BusinessService
    embedding: EmbeddingAccess
    clock: Clock
    policy: KnowledgePolicy
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)

    async def write(
        self,
        session_id: str,
        snippet: str,
        *,
        user: str | None = None,
        tenant: str | None = None,
        salient: bool = False,
        promote_to: PromotionTarget | None = None,
    ) -> ScratchpadWrite:
        """Add a snippet to a session's scratchpad, evicting the least recently used at the cap.

        Promotion happens here when the client marks the snippet salient, or when it (or a
        near-duplicate: cosine >= `recurrence_similarity`, or equal normalised text without a
        model) has now been written in `recurrence_count` different sessions of the same user
        (else tenant). The destination is `promote_to`, by default the user's preferences when
        a user is given, else the tenant's business context.

        Raises:
            InvalidInputError: A field is empty, too long or badly formed, or a promotion has
                no user/tenant to go to; nothing is written.
        """
        gate = Redactor(self.redaction)
        draft = self._draft(session_id, snippet, user, tenant, salient, promote_to, gate)
        text, target = draft.text, draft.promote_to
        notes: list[str] = []
        vector: Vector | None = None
        model_id: str | None = None
        if target is not None:  # only a promotable snippet needs comparing with others
            embedder, why = await self.embedding.for_write()
            if embedder is None:
                notes.append(f"{why}; recurrence is judged by equal normalised text.")
            else:
                vector = (await self.embedding.embed(embedder, [text]))[0]
                model_id = embedder.model_id
        written = await self.store.write(
            draft, vector, model_id, self.clock.now(), cap=self.policy.scratchpad_cap
        )
        stored = written.snippet
        occurrences, peers = 1, [stored]
        promotion: Promotion | None = None
        if target is not None:
            occurrences, peers = await self._recurrences(stored, vector, model_id)
        if target is not None and stored.promoted_to is None:
            reason: PromotionReason | None = None
            if salient:
                reason = PromotionReason.SALIENT
            elif occurrences >= self.policy.recurrence_count:
                reason = PromotionReason.RECURRENCE
            if reason is not None:
                promotion = await self._promote(stored, target, reason, peers, key=None)
        return ScratchpadWrite(
            snippet=stored,
            created=written.created,
            evicted=written.evicted,
            occurrences=occurrences,
            promotion=promotion,
            notes=notes,
            redacted=gate.counts(),
        )

    def _draft(
        self,
        session_id: str,
        snippet: str,
        user: str | None,
        tenant: str | None,
        salient: bool,
        promote_to: PromotionTarget | None,
        gate: Redactor,
    ) -> SnippetDraft:
        """Validate a write (credentials redacted); its destination defaults to the user."""
        session_id = check_session_id(session_id)
        text = gate.text(check_text("snippet", snippet, max_chars=self.policy.max_snippet_chars))
        user = check_optional_name("user", user)
        tenant = check_optional_name("tenant", tenant)
        target = promote_to or _default_target(user, tenant)
        if promote_to is PromotionTarget.PREFERENCES and user is None:
            raise InvalidInputError("user", "is required when promote_to is 'preferences'")
        if promote_to is PromotionTarget.BUSINESS_CONTEXT and tenant is None:
            raise InvalidInputError("tenant", "is required when promote_to is 'business_context'")
        if salient and target is None:
            raise InvalidInputError(
                "salient", "needs `user` or `tenant`, so the snippet has somewhere to be promoted"
            )
        return SnippetDraft(
            session_id=session_id,
            text=text,
            norm_hash=normalised_hash(text),
            user=user,
            tenant=tenant,
            salient=salient,
            promote_to=target,
        )

    async def _recurrences(
        self, snippet: Snippet, vector: Vector | None, model_id: str | None
    ) -> tuple[int, list[Snippet]]:
        """Sessions holding this snippet or a near-duplicate, and those snippets."""
        matched: list[Snippet] = []
        for other, other_vector in await self.store.peers(snippet.user, snippet.tenant, model_id):
            if other.norm_hash == snippet.norm_hash or (
                vector is not None
                and other_vector is not None
                and cosine(vector, other_vector) >= self.policy.recurrence_similarity
            ):
                matched.append(other)
        return len({s.session_id for s in matched}), matched

    async def read(self, session_id: str, ids: Sequence[int] | None = None) -> list[Snippet]:
        """A session's snippets (all, or these ids), most recently used first.

        A direct lookup, no embedding. Reading marks the snippets used: reading some ids
        makes them the last to be evicted.
        """
        session_id = check_session_id(session_id)
        if ids is not None and len(ids) > MAX_READ_IDS:
            raise InvalidInputError("ids", f"must hold at most {MAX_READ_IDS} ids")
        return await self.store.read(session_id, ids, self.clock.now())

    async def delete(
        self,
        session_id: str | None = None,
        ids: Sequence[int] | None = None,
        *,
        user: str | None = None,
        confirm: bool = False,
    ) -> list[int]:
        """Delete snippets: these `ids` of a session, a whole session, or every one of a user.

        Copies already promoted to preferences or business context stay; delete them there.

        Raises:
            ConfirmationRequiredError: A whole session or a user's snippets without `confirm`.
            InvalidInputError: Neither or both of `session_id` and `user`, or `ids` with `user`.
        """
        ids = check_items("ids", ids)
        if (session_id is None) == (user is None):
            raise InvalidInputError("session_id", "give either `session_id` or `user`, not both")
        if user is not None:
            user = check_name("user", user)
            if ids is not None:
                raise InvalidInputError("ids", "are ids within a session: give `session_id`")
        elif session_id is not None:
            session_id = check_session_id(session_id)
        if ids is None and not confirm:
            raise ConfirmationRequiredError(
                "deleting a whole scratchpad" if user is None else "deleting a user's snippets"
            )
        if ids is not None and not ids:
            return []
        return await self.store.delete(session_id=session_id, user=user, ids=ids)

    async def seed_playbook(self, session_id: str, playbook: Playbook) -> Snippet:
        """Write a playbook into a session's scratchpad, so the flow starts from the recipe.

        The note has no user or tenant, so it is never promoted: the playbook itself is the
        lasting copy. Writing the same playbook again refreshes the note.

        Raises:
            InvalidInputError: `session_id` is badly formed; nothing is written.
        """
        session_id = check_session_id(session_id)
        calls = json.dumps(playbook.tool_calls, ensure_ascii=False)
        slots = json.dumps(playbook.slots, ensure_ascii=False, sort_keys=True)
        text = (
            f"Playbook {playbook.id} (flow {playbook.flow}) worked before for "
            f"{playbook.user_query!r}: slots {slots}; tool calls {calls}; "
            f"outcome: {playbook.outcome}"
        )
        limit = self.policy.max_snippet_chars
        if len(text) > limit:
            text = text[: limit - 1] + "\u2026"
        draft = self._draft(session_id, text, None, None, False, None, Redactor(self.redaction))
        written = await self.store.write(
            draft, None, None, self.clock.now(), cap=self.policy.scratchpad_cap
        )
        return written.snippet

    async def notes_of(self, session_id: str) -> list[str]:
        """A session's snippet texts, most recently used first; [] for an id it cannot hold.

        Its conversation's summaries are written from them too.
        """
        try:
            session_id = check_session_id(session_id)
        except InvalidInputError:
            return []
        return [s.text for s in await self.store.read(session_id, None, self.clock.now())]

    async def promote(
        self,
        session_id: str,
        snippet_id: int,
        target: PromotionTarget,
        *,
        user: str | None = None,
        tenant: str | None = None,
        key: str | None = None,
    ) -> Promotion:
        """Promote a snippet on request, to a user's preferences or a tenant's context.

        `user`/`tenant` default to those the snippet was written with; `key` names the
        preference (default `scratchpad/<hash>`). Promoting again to the same place is a
        no-op that returns the same destination.

        Raises:
            NotFoundError: The session holds no snippet with this id.
            InvalidInputError: The destination's user or tenant is missing or badly formed.
        """
        session_id = check_session_id(session_id)
        user = check_optional_name("user", user)
        tenant = check_optional_name("tenant", tenant)
        if key is not None:
            key = check_text("key", key, max_chars=MAX_KEY_CHARS)
        snippet = await self.store.get(session_id, snippet_id)
        if snippet is None:
            raise NotFoundError(f"no snippet {snippet_id} in session {session_id!r}")
        if target is PromotionTarget.PREFERENCES and (user or snippet.user) is None:
            raise InvalidInputError("user", "is required to promote to preferences")
        if target is PromotionTarget.BUSINESS_CONTEXT and (tenant or snippet.tenant) is None:
            raise InvalidInputError("tenant", "is required to promote to business_context")
        scoped = snippet.model_copy(
            update={"user": user or snippet.user, "tenant": tenant or snippet.tenant}
        )
        return await self._promote(scoped, target, PromotionReason.EXPLICIT, [snippet], key=key)

    async def _promote(
        self,
        snippet: Snippet,
        target: PromotionTarget,
        reason: PromotionReason,
        peers: Sequence[Snippet],
        *,
        key: str | None,
    ) -> Promotion:
        """Copy a snippet to its destination and record that on it (and its duplicates).

        The copy and the record are two writes; both are idempotent (a preference upserts by
        key, a document is a no-op for unchanged text), so a retry after a failure between
        them finishes the job without duplicating anything.
        """
        # A near-duplicate promoted earlier already names the destination: reuse it, so one
        # recurring snippet becomes one preference or document, not one per wording.
        earlier = next((p.promoted_ref for p in peers if p.promoted_to is target), None)
        ref = key or earlier or f"scratchpad/{snippet.norm_hash[:12]}"
        if target is PromotionTarget.BUSINESS_CONTEXT and key and not key.startswith("scratchpad/"):
            # A promoted note is its own document: a key such as "handbook.md" must not
            # replace the ingested document of that name.
            ref = f"scratchpad/{key}"
        if target is PromotionTarget.PREFERENCES:
            owner = snippet.user
            assert owner is not None  # checked by the callers
            await self.preferences.update(owner, ref, snippet.text, origin="scratchpad")
        else:
            owner = snippet.tenant
            assert owner is not None  # checked by the callers
            await self.business.ingest(owner, ref, snippet.text, origin=DocumentOrigin.PROMOTED)
        ids = sorted({snippet.id, *(p.id for p in peers if p.promoted_to is None)})
        await self.store.mark_promoted(ids, target, ref, reason, self.clock.now())
        return Promotion(target=target, ref=ref, owner=owner, reason=reason)
