"""Playbooks that promote themselves from Claude Code transcripts, and their recipes.

`promote` stores each flow of a transcript that completed and was approved
(domain.playbook_flows) as a playbook of the user, through `PreferenceService.record_playbook`:
redacted like every playbook, one per flow (the same flow approved again updates its playbook,
an identical one writes nothing), tagged with the project it came from (slot `project`).

`recipe` is the other half: for a prompt that matches one of the user's playbooks *strongly*,
the playbook as a recipe the model may follow or adapt, fenced as data, once per session. A
playbook matches strongly when the match strength of domain.match (cosine with a model, else
the share of the prompt's words the playbook's request holds, function words and fillers
such as "please" left out) is `strong`, and at least `partial_words` of the request's own
words are in the prompt (a prompt of one word is in many requests); only playbooks of this
project, or recorded without one, are considered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import structlog
from pydantic import JsonValue

from memory_core.domain.fts_query import search_words
from memory_core.domain.knowledge import Playbook
from memory_core.domain.match import Match, MatchThresholds, match_strength, word_share
from memory_core.domain.playbook_flows import Approval, playbook_flows, recipe_text
from memory_core.domain.transcript import TranscriptEntry
from memory_core.errors import InvalidInputError
from memory_core.ports import Clock
from memory_core.ports.hooks import HookSessionStore
from memory_core.services.preferences import PreferenceService

__all__ = [
    "PROMOTED_SOURCE",
    "RECIPE_TOKENS",
    "PlaybookPromotion",
    "Promoted",
    "playbook_user",
]

log = structlog.get_logger(__name__)

PROMOTED_SOURCE = "claude-code"
RECIPE_TOKENS = 400
_QUERY_CHARS = 1000
_CANDIDATES = 5
_NOT_NAME = re.compile(r"[^A-Za-z0-9._:/@+-]+")
# Words a request is wrapped in that say nothing of the work ("please also run ..."): left out
# of the prompt's words, as search leaves out function words.
_FILLER = frozenset(("please", "pls", "kindly", "just", "also", "now", "again", "lets", "let"))


@dataclass(frozen=True)
class Promoted:
    """A flow stored as a playbook: new (`created`), `updated` in place, or `unchanged`."""

    playbook: Playbook
    status: Literal["created", "updated", "unchanged"]
    approval: Approval


def playbook_user(user_id: str | None, user_name: str | None) -> str:
    """Whose playbooks the hooks promote and inject.

    The hook settings' user id, else the person's name made a valid user name ("Ada Lovelace"
    -> "Ada-Lovelace"), else "user".
    """
    for candidate in (user_id, user_name):
        name = _NOT_NAME.sub("-", (candidate or "").strip()).strip("-._:/@+")[:128]
        if name:
            return name
    return "user"


def _mark(playbook: Playbook) -> str:
    """What marks a playbook as shown in a session (beside the rule marks of the same set)."""
    return f"playbook:{playbook.id}"


class PlaybookPromotion:
    """Promotes approved flows to playbooks and offers them back as recipes."""

    def __init__(
        self,
        *,
        preferences: PreferenceService,
        thresholds: MatchThresholds,
        hook_sessions: HookSessionStore | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`hook_sessions` and `clock` remember which recipes a session was shown."""
        self._preferences = preferences
        self._thresholds = thresholds
        self._hooks = hook_sessions
        self._clock = clock

    async def promote(
        self, project: str, user: str, entries: Sequence[TranscriptEntry]
    ) -> list[Promoted]:
        """Store the approved flows of `entries` (a whole transcript) as playbooks of `user`.

        Reading the same transcript again stores nothing new. A flow the store refuses (too
        long) is skipped and logged; the others are still stored.
        """
        out: list[Promoted] = []
        for flow in playbook_flows(entries):
            slots: dict[str, JsonValue] = {
                "source": PROMOTED_SOURCE,
                "project": project,
                "approval": flow.approval,
            }
            try:
                record = await self._preferences.record_playbook(
                    user,
                    flow.flow_id,
                    slots,
                    flow.steps,
                    flow.outcome,
                    flow.request,
                    one_per_flow=True,
                )
            except InvalidInputError as exc:
                log.warning("playbooks.promotion_skipped", field=exc.field)
                continue
            status: Literal["created", "updated", "unchanged"] = (
                "created" if record.created else "updated" if record.replaced else "unchanged"
            )
            out.append(Promoted(record.playbook, status, flow.approval))
        if out:
            log.info("playbooks.promoted", count=sum(1 for p in out if p.status != "unchanged"))
        return out

    async def recipe(
        self,
        project: str,
        user: str,
        prompt: str,
        *,
        session_id: str | None = None,
        tokens: int = RECIPE_TOKENS,
    ) -> str | None:
        """The best playbook matching `prompt` strongly, as a fenced recipe; None otherwise.

        With `session_id`, a playbook the session was shown already is not shown again (the
        next strong one may be).
        """
        prompt = prompt.strip()[:_QUERY_CHARS]
        words = [w for w in search_words(prompt, drop_stopwords=True) if w not in _FILLER]
        if not words:
            return None
        try:
            found = await self._preferences.find_playbooks(user, prompt, limit=_CANDIDATES)
        except InvalidInputError:
            return None
        for match in found.matches:
            playbook = match.item
            if playbook.slots.get("project", project) != project:
                continue
            cosine = match.score if found.mode == "semantic" else None
            strength = match_strength(
                cosine, word_share(words, playbook.user_query), self._thresholds
            )
            request_words = search_words(playbook.user_query, drop_stopwords=True)
            if strength is not Match.STRONG or (
                word_share(request_words, prompt) < self._thresholds.partial_words
            ):
                continue
            if session_id is not None and not await self._first_time(project, session_id, playbook):
                continue
            return recipe_text(project, playbook, tokens=tokens)
        return None

    async def _first_time(self, project: str, session_id: str, playbook: Playbook) -> bool:
        if self._hooks is None or self._clock is None:
            return True
        fresh = await self._hooks.add_tool_rules(
            project, session_id, [_mark(playbook)], self._clock.now()
        )
        return bool(fresh)
