"""What a recorded session said, as memories: the person's prompts and the model's answers (pure).

From the entries of a transcript (domain.transcript) this keeps two things:

- each prompt of the person, unless it only acknowledges ("yes", "ok, go ahead", "thanks");
- each final answer of the model: the text it wrote after the last tool call of its turn (the
  turn ends at the next prompt, a compaction, or the end of what was read), unless it only
  acknowledges ("Done.", "Stored."). What it said before a tool call ("Let me read the
  handler.") is narration, not an answer.

Tool calls and their results stay in conversation memory only: a file listing or a test log is
not something to recall by meaning next week. A long text is cut into parts of at most
`SAID_PART_CHARS` characters along paragraph and sentence boundaries, so each part can be
found and injected on its own.

A session has *substance*, and earns a summary of its own, when it holds at least
`SUBSTANCE_PROMPTS` prompts or `SUBSTANCE_TOOL_CALLS` tool calls: a one-question `claude -p`
run is already recorded by its turns, and a digest of it would only repeat them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.boilerplate import is_acknowledgement
from memory_core.domain.chunking import chunk_text
from memory_core.domain.hook_session import RECORDED_KINDS, SAID_KIND, SUBAGENT_RESULT_KIND
from memory_core.domain.transcript import TranscriptEntry

__all__ = [
    "RECORDED_KINDS",
    "SAID_KIND",
    "SAID_PART_CHARS",
    "SUBAGENT_RESULT_KIND",
    "SUBSTANCE_PROMPTS",
    "SUBSTANCE_TOOL_CALLS",
    "SaidItem",
    "has_substance",
    "said_items",
    "said_parts",
    "session_digest",
]


SAID_PART_CHARS = 900
_PART_OVERLAP = 80
SUBSTANCE_PROMPTS = 3
SUBSTANCE_TOOL_CALLS = 10
_DIGEST_PROMPTS = 6
_DIGEST_PROMPT_CHARS = 160
_DIGEST_ANSWER_CHARS = 500
_REPLY_CHARS = 300


@dataclass(frozen=True)
class SaidItem:
    """One prompt or answer (or a part of a long one), ready to be stored."""

    role: str  # "user" or "assistant"
    text: str
    at: datetime | None
    part: int = 1
    parts: int = 1
    # What it replies to, shortened: an answer's prompt, a prompt's previous answer.
    reply_to: str | None = None


def said_parts(role: str, text: str, at: datetime | None, reply_to: str | None) -> list[SaidItem]:
    """`text` said by `role`, in parts of at most SAID_PART_CHARS, each knowing what it answers."""
    context = _short(reply_to, _REPLY_CHARS) if reply_to else None
    if len(text) <= SAID_PART_CHARS:
        return [SaidItem(role, text, at, reply_to=context)]
    chunks = chunk_text(text, size=SAID_PART_CHARS, overlap=_PART_OVERLAP)
    return [SaidItem(role, c.text, at, n, len(chunks), context) for n, c in enumerate(chunks, 1)]


def said_items(entries: Sequence[TranscriptEntry]) -> list[SaidItem]:
    """The prompts and final answers of `entries`, in order (see the module docstring)."""
    out: list[SaidItem] = []
    answer: list[TranscriptEntry] = []
    # A turn opened by Claude Code (a Stop hook's feedback) answers it, not the person:
    # "Nothing new to store." is no memory.
    by_person = True
    prompt: str | None = None  # the turn's prompt
    last_answer: str | None = None  # the answer the next prompt replies to

    def close_turn() -> None:
        nonlocal last_answer
        text = "\n\n".join(e.text for e in answer)
        if answer and by_person and not is_acknowledgement(text):
            out.extend(said_parts("assistant", text, answer[-1].at, prompt))
            last_answer = text
        answer.clear()

    for entry in entries:
        if entry.kind == "user":
            close_turn()
            by_person = True
            prompt = entry.text
            if not is_acknowledgement(entry.text):
                out.extend(said_parts("user", entry.text, entry.at, last_answer))
        elif entry.kind == "assistant":
            answer.append(entry)
        elif entry.kind == "tool_call":
            answer.clear()  # what came before the call was narration
        elif entry.kind in ("compaction_summary", "boundary"):
            close_turn()
            by_person = entry.kind == "compaction_summary"
            prompt = last_answer = None
    close_turn()
    return out


def has_substance(prompts: int, tool_calls: int) -> bool:
    """Whether a session is worth a summary of its own (see the module docstring)."""
    return prompts >= SUBSTANCE_PROMPTS or tool_calls >= SUBSTANCE_TOOL_CALLS


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def session_digest(
    *,
    title: str | None,
    started: datetime | None,
    prompts: Sequence[str],
    answers: Sequence[str],
    tools: Iterable[str],
) -> str:
    """A session's summary from its own content: when, its title, what was asked, the outcome.

    No session id and no counts of messages: those are bookkeeping, not memory.
    """
    head = "Session" + (f" of {started:%Y-%m-%d}" if started else "")
    if title:
        head += f": {_short(title, 120)}"
    lines = [head]
    asked = [_short(p, _DIGEST_PROMPT_CHARS) for p in prompts if p.strip()]
    if asked:
        shown = asked[:_DIGEST_PROMPTS]
        more = len(asked) - len(shown)
        lines.append("Asked: " + " | ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
    # An MCP tool's own name is after its server's: mcp__<server>__<tool>.
    used = sorted({t.rsplit("__", 1)[-1] for t in tools if t})
    if used:
        lines.append("Tools: " + ", ".join(used[:12]))
    if answers:
        lines.append("Last answer: " + _short(answers[-1], _DIGEST_ANSWER_CHARS))
    return "\n".join(lines)
