"""The session-start context: a project's memory laid out for a model, within a budget.

Claude Code's SessionStart hook injects it (server/hooks), and a client without hooks can be
handed the same text (an MCP prompt, `load_context`'s default). Sections, in this order:

1. the project's procedural rules ("when X: do Y"), most recently used first;
2. its most recent memories (semantic facts, episodic events, working notes), by tier;
3. the user's preferences, when the caller knows the user;
4. the summary of the project's last recorded session;
5. where the person is working (the "screen context" of a coding client): directory, git
   branch and status, recently changed files.

The budget is filled in priority order, not text order: the screen context and the last
session summary (both short and bounded) first, then rules, preferences and memories until it
is spent, so a project with hundreds of rules still shows where the person is. The text never
exceeds `max_chars` (Claude Code drops hook context above 10,000 characters).

Nothing is marked as used: a start context is shown at every session, and counting it as a use
would keep the same memories ACTIVE forever. Reading is a few indexed queries, no write.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_core.config.policies import TierPolicy
from memory_core.domain.budget import TokenAllowance
from memory_core.domain.fence import fence_intro, fenced, flat
from memory_core.domain.hook_session import SESSION_SUMMARY_KIND
from memory_core.domain.inputs import check_project
from memory_core.domain.models import Layer, Memory
from memory_core.domain.rules import condition_phrase
from memory_core.domain.tiers import classify_tier, tier_cutoffs
from memory_core.domain.tokens import count_tokens
from memory_core.ports import Clock, MemoryRepository
from memory_core.ports.hooks import HookSessionStore
from memory_core.services.access_recording import hand_out

if TYPE_CHECKING:
    # An annotation only: ports.knowledge loads numpy, which the session-start hook never needs.
    from memory_core.ports.knowledge import PreferenceStore

__all__ = ["SESSION_SUMMARY_KIND", "ScreenContext", "SessionStartService", "StartContext"]


_RULES_SCAN = 50
_MEMORIES_SCAN = 60
_ITEM_MAX_CHARS = 400
_SUMMARY_MAX_CHARS = 1500
_MAX_FILES = 10


@dataclass(frozen=True)
class ScreenContext:
    """Where the person works, as a coding client sees it at session start."""

    cwd: str
    branch: str | None = None
    status: str | None = None  # e.g. "3 modified, 1 untracked"
    changed_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartContext:
    """The text for the model, its size, and what went into it."""

    text: str
    tokens: int
    memory_ids: tuple[int, ...] = ()
    sections: dict[str, int] = field(default_factory=dict)  # section -> items shown
    omitted: int = 0  # memories and rules the budget left out

    @property
    def empty(self) -> bool:
        """True when nothing worth injecting was found."""
        return not self.text


class _Room:
    """How many more rules and memories a briefing of at most `limit` items may show."""

    def __init__(self, limit: int | None) -> None:
        self._left = limit

    def full(self) -> bool:
        """True once `limit` items are shown."""
        return self._left is not None and self._left <= 0

    def take(self) -> None:
        """One more item shown."""
        if self._left is not None:
            self._left -= 1


def _one_line(text: str, limit: int = _ITEM_MAX_CHARS) -> str:
    return flat(text, limit)


def _memory_line(memory: Memory, tier: str) -> str:
    if memory.layer is Layer.SEMANTIC and memory.key:
        body = f"{_one_line(memory.key, 160)}: {_one_line(memory.content)}"
    else:
        body = _one_line(memory.content)
    return f"- #{memory.id} [{memory.layer.value}, {tier}] {body}"


def _rule_line(rule: Memory) -> str:
    """A rule as "when X: do Y", with no second "when" if the condition opens with one."""
    condition = condition_phrase(_one_line(rule.key or "", 160))
    return f"- #{rule.id} {condition}: {_one_line(rule.content)}"


def _screen_lines(screen: ScreenContext) -> list[str]:
    lines = [f"- directory: {screen.cwd}"]
    if screen.branch:
        status = f" ({screen.status})" if screen.status else ""
        lines.append(f"- git branch: {screen.branch}{status}")
    if screen.changed_files:
        shown = ", ".join(screen.changed_files[:_MAX_FILES])
        more = len(screen.changed_files) - _MAX_FILES
        lines.append(f"- recently changed: {shown}" + (f" (+{more} more)" if more > 0 else ""))
    return lines


class SessionStartService:
    """Builds the session-start context of a project (read-only)."""

    def __init__(
        self,
        *,
        repo: MemoryRepository,
        clock: Clock,
        tiers: TierPolicy,
        preferences: PreferenceStore | None = None,
        hook_sessions: HookSessionStore | None = None,
    ) -> None:
        self._repo = repo
        self._clock = clock
        self._tiers = tiers
        self._preferences = preferences
        self._hook_sessions = hook_sessions

    async def build(
        self,
        project: str,
        *,
        user: str | None = None,
        screen: ScreenContext | None = None,
        session_id: str | None = None,
        token_budget: int = 2000,
        max_chars: int = 9500,
        limit: int | None = None,
        hand_out_shown: bool = False,
        handed_out: Collection[int] = (),
    ) -> StartContext:
        """The project's context for a new session, within `token_budget` and `max_chars`.

        Args:
            project: Whose memories.
            user: Whose preferences to list (none without it).
            screen: Where the person works (the section is left out without it).
            session_id: The session being started: its own summary is not "the last session".
            token_budget: About how many tokens the text may take.
            max_chars: A hard cap on the text's length.
            limit: The most rules and memories shown (rules first); None: as many as fit.
            hand_out_shown: Record the memories and rules shown as used (access count, last
                use): for a model that asked for the briefing (`load_context`). The hooks
                never do: what they show counts as used only once the transcript shows it used.
            handed_out: Ids the caller already recorded as used in this same request (not
                counted twice).

        Returns:
            The context; its text is empty when the project has nothing to show and no
            screen context was given.
        """
        project = check_project(project)
        budget = TokenAllowance(token_budget, per_item=1)  # + the newline joining lines
        budget.take(fence_intro(project, "Memory"))
        screen_lines = (
            [line for line in _screen_lines(screen) if budget.take(line)] if screen else []
        )
        last = await self._last_summary(project, session_id)
        summary_lines: list[str] = []
        if last is not None:
            line = _one_line(last.content, _SUMMARY_MAX_CHARS)
            when = last.updated_at.strftime("%Y-%m-%d %H:%M UTC")
            if budget.take(line):
                summary_lines = [f"({when}) {line}"]
        room = _Room(limit)
        rule_lines, shown = await self._rules(project, budget, room)
        pref_lines = await self._preference_lines(user, budget)
        memory_lines = await self._memory_lines(project, budget, last, shown, room)
        already = set(handed_out)
        fresh = [memory_id for memory_id in shown if memory_id not in already]
        if hand_out_shown and fresh:
            await hand_out(self._repo, project, fresh, self._clock.now())
        sections = {
            "rules": rule_lines,
            "memories": memory_lines,
            "preferences": pref_lines,
            "last_session": summary_lines,
            "screen": screen_lines,
        }
        if not any(sections.values()):
            return StartContext(text="", tokens=0, omitted=budget.omitted)
        text = _layout(project, user, sections, max_chars)
        return StartContext(
            text=text,
            tokens=count_tokens(text),
            memory_ids=tuple(shown),
            sections={name: len(lines) for name, lines in sections.items()},
            omitted=budget.omitted,
        )

    async def _rules(
        self, project: str, budget: TokenAllowance, room: _Room
    ) -> tuple[list[str], list[int]]:
        lines, shown = [], []
        for rule in await self._repo.list_recent(project, Layer.PROCEDURAL, limit=_RULES_SCAN):
            line = _rule_line(rule)
            if not room.full() and budget.take(line):
                room.take()
                lines.append(line)
                shown.append(rule.id)
        return lines, shown

    async def _preference_lines(self, user: str | None, budget: TokenAllowance) -> list[str]:
        if not user or self._preferences is None:
            return []
        lines = []
        for pref, _ in await self._preferences.list_user(user, None):
            line = f"- {_one_line(pref.key, 160)}: {_one_line(pref.value)}"
            if budget.take(line):
                lines.append(line)
        return lines

    async def _memory_lines(
        self,
        project: str,
        budget: TokenAllowance,
        last: Memory | None,
        shown: list[int],
        room: _Room,
    ) -> list[str]:
        """Recent memories by tier (appends their ids to `shown`)."""
        cutoffs = tier_cutoffs(self._clock.now(), self._tiers)
        lines = []
        for memory in await self._repo.list_recent(project, None, limit=_MEMORIES_SCAN):
            if memory.layer is Layer.PROCEDURAL or (last is not None and memory.id == last.id):
                continue
            if memory.metadata.get("kind") == SESSION_SUMMARY_KIND:
                continue  # older sessions' summaries: the last one is shown on its own
            line = _memory_line(memory, classify_tier(memory.reference_time, cutoffs).value)
            if not room.full() and budget.take(line):
                room.take()
                lines.append(line)
                shown.append(memory.id)
        return lines

    async def _last_summary(self, project: str, session_id: str | None) -> Memory | None:
        if self._hook_sessions is None:
            return None
        memory_id = await self._hook_sessions.latest_summary(project, session_id)
        return await self._repo.get(project, memory_id) if memory_id is not None else None


_TITLES = {
    "rules": "Rules saved for this project (procedural memory: when X, do Y)",
    "memories": "Recent memories (newest use first; tier = how recently used)",
    "preferences": "Preferences of {user}",
    "last_session": "Last session in this project",
    "screen": "Where you are working (now)",
}


def _layout(
    project: str,
    user: str | None,
    sections: dict[str, list[str]],
    max_chars: int,
) -> str:
    """The sections inside the fence (domain.fence), cut to `max_chars` at a line's end."""
    parts = [
        "Search for more with the memstrata `search` tool; store what is worth keeping with "
        "`append` or `learn`.",
    ]
    for name, lines in sections.items():
        if lines:
            parts.append(f"## {_TITLES[name].format(user=flat(user or '', 100))}")
            parts.extend(lines)
    intro = fence_intro(project, "Memory")
    closing = len(fenced(intro, [])) + 2  # the fence's lines and a "…"
    body: list[str] = []
    size = 0
    for line in parts:
        if size + len(line) + 1 + closing > max_chars:
            body.append("…")
            break
        body.append(line)
        size += len(line) + 1
    return fenced(intro, body)
