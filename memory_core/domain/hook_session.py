"""What the Claude Code hooks remember about one session (pure data)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "PROMPT_SOURCE",
    "RECORDED_KINDS",
    "SAID_KIND",
    "SESSION_SUMMARY_KIND",
    "START_SOURCE",
    "SUBAGENT_RESULT_KIND",
    "TOOL_SOURCE",
    "HookSession",
    "TranscriptCursor",
]

# `source` of the context entries that record what the hooks injected (kept here, beside the
# hook session, so a hook that only injects needs no transcript recorder to name them).
START_SOURCE = "memstrata:session-start"
PROMPT_SOURCE = "memstrata:prompt-recall"
TOOL_SOURCE = "memstrata:tool-rules"
# metadata["kind"] of the episodic memory that holds a recorded session's summary (here, in the
# domain, because ranking demotes such digests below what was said).
SESSION_SUMMARY_KIND = "session_summary"
# metadata["kind"] of an episodic memory that holds a prompt or an answer of a session.
SAID_KIND = "said"
# metadata["kind"] of a sub-agent's result (server.hooks.subagents).
SUBAGENT_RESULT_KIND = "subagent_result"
# The kinds that record what a session said: a record, not a fact with versions (search
# never reorders them newest first). Here, not in domain.turns: the hooks that only name
# them must not load the transcript reader.
RECORDED_KINDS = frozenset((SAID_KIND, SUBAGENT_RESULT_KIND, SESSION_SUMMARY_KIND))


@dataclass(frozen=True)
class TranscriptCursor:
    """How far a transcript has been recorded: lines read, and the uuid of the last one.

    The uuid finds the place again when lines before it changed; the count serves transcripts
    whose lines carry no uuid.
    """

    lines: int = 0
    uuid: str | None = None


@dataclass(frozen=True)
class HookSession:
    """One session as the hooks left it."""

    project: str
    session_id: str
    start_context: str | None
    start_tokens: int
    injected: tuple[int, ...]
    cursor: TranscriptCursor
    summary_id: int | None
    updated_at: datetime
    # The transcript's byte offset where the Stop hook last asked, or saw a save (0: never).
    stop_offset: int = 0
    # The procedural rules the PreToolUse hook showed ("id:version" marks, domain.tool_calls).
    tool_rules: tuple[str, ...] = ()

    def not_injected(self, ids: Iterable[int]) -> list[int]:
        """`ids` not injected in this session yet, each once, in their order."""
        known = set(self.injected)
        return [i for i in dict.fromkeys(ids) if i not in known]
