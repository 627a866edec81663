"""Flows of a Claude Code transcript that earned a playbook: done, kept, and approved (pure).

A *flow* is one request of the person and what the model did for it: the prompt, the tool
calls of the model's turn, and its final answer. A prompt that only acknowledges ("yes", "ok,
go ahead") after which the model makes more calls continues the flow it answers (the model
proposed, the person agreed); a turn Claude Code opened (a Stop hook's feedback, after a
compaction) belongs to no flow. Each flow is judged by these rules, in this order; the first
that fails names the verdict:

1. **A request** (`no_request`): the prompt is not an acknowledgement nor a correction, and
   holds at least MIN_REQUEST_WORDS content words ("fix it" recalls nothing).
2. **Completed** (`rejected`, `unfinished`, `error`): the model wrote a final answer after its
   last call (an interrupted turn has none), every call has a result, no call was refused by
   the person ("The user doesn't want to proceed with this tool use"), and no error is left:
   a result is an error when `is_error` is set, it opens with a failing "Exit code N" or it is a
   `<tool_use_error>`; an error is *resolved* when a later call of the same tool on the same
   target succeeded (the same file path; the same command, its first two words after any
   leading `cd DIR &&`), so "tests fail, fix, tests pass" completes and its failed run is left
   out of the recipe; an error never retried with success leaves the flow failed.
3. **Worth keeping** (`trivial`): at least MIN_STEPS recorded calls, at least one of which
   acts (an Edit, Write, MultiEdit or NotebookEdit; a Bash command that is not only reading:
   `ls`, `cat`, `grep`, `git status|log|diff|show` ...; an MCP tool). memstrata's own tools,
   ToolSearch and TodoWrite are bookkeeping and not recorded.
4. **Approved** (`no_follow_up`, `corrected`): the person's next prompt exists (the last flow
   of a transcript waits for one: a later recording judges it) and is not a correction, that
   is none of: an opening "no", "nope", "wait", "stop", "undo", "revert", "actually", "hmm",
   "but", "why did you", "you didn't|forgot|missed|broke", "that's not", "don't" (after
   any thanks: "Thanks, but ..." is a correction); anywhere "revert", "roll back", "undo",
   "actually", "instead", "wrong", "incorrect", "mistake", "broke", "broken", "doesn't work",
   "didn't work", "not working", "still fails", "still broken", "not what I", "I meant",
   "should have", "try again", "redo", "go back", "put it back"; nor the request asked again
   (`keyword_overlap` >= REPEAT_OVERLAP). Approval is `explicit` when the prompt opens with
   thanks or praise ("thanks", "perfect", "lgtm", "looks good", "works"), else `moved_on`.

A flow that passes becomes a FlowPlaybook: the request, the steps in order with their key
parameters (a Bash command, a file path, a search pattern; never a file's contents, each cut
to STEP_PARAM_CHARS), the final answer as outcome, and an identity (`flow_id`) from the
request's words and the steps' shape (tools and targets, not a commit message), so the same
work approved again is the same flow.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from memory_core.domain.boilerplate import is_acknowledgement
from memory_core.domain.budget import TokenAllowance
from memory_core.domain.fence import fence_intro, fenced, flat
from memory_core.domain.fts_query import search_words
from memory_core.domain.knowledge import Playbook
from memory_core.domain.similarity import keyword_overlap
from memory_core.domain.transcript import TranscriptEntry

__all__ = [
    "MAX_STEPS",
    "MIN_REQUEST_WORDS",
    "MIN_STEPS",
    "REPEAT_OVERLAP",
    "STEP_PARAM_CHARS",
    "Approval",
    "FlowPlaybook",
    "FlowRuling",
    "FlowVerdict",
    "is_correction",
    "judge_flows",
    "playbook_flows",
    "recipe_text",
    "step_of",
]

MIN_STEPS = 2
MIN_REQUEST_WORDS = 2
MAX_STEPS = 30
STEP_PARAM_CHARS = 300
REPEAT_OVERLAP = 0.9
_REQUEST_CHARS = 1000
_OUTCOME_CHARS = 600

FlowRuling = Literal[
    "promoted",
    "no_request",
    "unfinished",
    "error",
    "rejected",
    "trivial",
    "no_follow_up",
    "corrected",
]
Approval = Literal["explicit", "moved_on"]

_EDITS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_BOOKKEEPING = frozenset({"ToolSearch", "TodoWrite", "TodoRead", "ExitPlanMode"})
# Programs that only look: a flow of these alone changed nothing worth repeating.
_READING_TEXT = (
    "ls cat head tail less more pwd echo printf grep rg egrep fgrep find fd wc which whereis "
    "type file stat tree du df env printenv whoami date uname id true"
)
_READING = frozenset(_READING_TEXT.split())
_GIT_READING_TEXT = "status log diff show blame grep ls-files rev-parse remote branch describe"
_GIT_READING = frozenset(_GIT_READING_TEXT.split())
_REJECTED = "the user doesn't want to proceed with this tool use"
_FAILED_EXIT = re.compile(r"\A\s*(error:\s*)?exit code [1-9]\d*", re.IGNORECASE)
_TOOL_ERROR = re.compile(r"\A\s*<tool_use_error>", re.IGNORECASE)
_SEGMENTS = re.compile(r"&&|\|\||;|\|")

_ACK_OPENER = (
    r"(?:(?:ok(?:ay)?|thanks|thank you|thx|ty|great|nice|cool|sure|yes|yeah|hm+)[\s,.!]*)*"
)
_CORRECTION_OPENING = re.compile(
    r"\A\W*" + _ACK_OPENER + r"(?:no\b|nope\b|nah\b|wait\b|stop\b|undo\b|revert\b|actually\b|"
    r"hm+\b|but\b|hold on\b|why did you\b|why didn'?t you\b|you didn'?t\b|you forgot\b|"
    r"you missed\b|you broke\b|that'?s not\b|that is not\b|that isn'?t\b|it'?s not\b|"
    r"don'?t\b|do not\b|not quite\b|not that\b|wrong\b|rather\b)",
    re.IGNORECASE,
)
_CORRECTION_ANYWHERE = re.compile(
    r"\b(?:revert\w*|roll(?:ed|ing)? ?back|undo|actually|instead|wrong|incorrect|mistakes?|"
    r"broke|broken|(?:doesn'?t|does not|didn'?t|did not|isn'?t|is not) work(?:ing)?|"
    r"not working|still (?:fail\w*|broken|wrong|not|doesn'?t|does not|errors?)|"
    r"not what i|i meant|i said|should(?:n'?t| not)? have|try again|redo|go back|put it back)\b",
    re.IGNORECASE,
)
_PRAISE = re.compile(
    r"\A\W*(?:thanks|thank you|thx|ty|great|perfect|awesome|excellent|brilliant|nice|cool|"
    r"lgtm|looks good|looks great|good job|well done|works|that works|it works|exactly)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Call:
    """A tool call of a flow and how it ended (None: no result was read)."""

    tool: str
    arguments: Mapping[str, Any]
    failed: bool | None = None
    refused: bool = False


@dataclass
class _Turn:
    """A prompt of the person and what the model did until the next one."""

    prompt: str
    calls: list[_Call] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)  # text after the last call


@dataclass(frozen=True)
class FlowPlaybook:
    """A flow worth a playbook: what was asked, the steps, the outcome, and how approved."""

    flow_id: str
    request: str
    steps: list[JsonValue]
    outcome: str
    approval: Approval


@dataclass(frozen=True)
class FlowVerdict:
    """A flow's request and the rule that decided it (`promoted`, or the first that failed)."""

    request: str
    verdict: FlowRuling
    playbook: FlowPlaybook | None = None


def is_correction(prompt: str) -> bool:
    """The person says the work before was wrong, or asks for it to change (module docstring)."""
    return bool(_CORRECTION_OPENING.match(prompt) or _CORRECTION_ANYWHERE.search(prompt))


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _commands(command: str) -> list[list[str]]:
    """The words of each simple command of a shell line (split on && || ; |)."""
    out = []
    for part in _SEGMENTS.split(command):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        # Leading VAR=value assignments are the environment, not the program.
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            words = words[1:]
        if words:
            out.append(words)
    return out


def _reads_only(command: str) -> bool:
    """A shell line whose every command only looks (ls, cat, git status, ...)."""
    for words in _commands(command):
        program = words[0].rsplit("/", 1)[-1]
        if program == "cd":
            continue
        if program == "git":
            sub = next((w for w in words[1:] if not w.startswith("-")), "")
            if sub not in _GIT_READING:
                return False
        elif program == "sed" and "-i" not in words:
            continue
        elif program not in _READING:
            return False
    return True


def _is_memstrata(tool: str) -> bool:
    return tool.startswith("mcp__") and "memstrata" in tool


# The key parameters of each built-in tool's step.
_STEP_KEYS: dict[str, tuple[str, ...]] = {
    "Bash": ("command",),
    "Read": ("file_path",),
    "Grep": ("pattern", "path", "glob"),
    "Glob": ("pattern", "path"),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Task": ("subagent_type", "description"),
    "Agent": ("subagent_type", "description"),
} | dict.fromkeys(_EDITS, ("file_path", "notebook_path"))


def step_of(tool: str, arguments: Mapping[str, Any]) -> dict[str, JsonValue] | None:
    """A call's key parameters as a recipe step, or None for bookkeeping calls.

    A command, a path, a pattern, a URL, a sub-agent's type and task: what another run needs
    to repeat the step. Never a file's contents or an edit's strings.
    """
    if tool in _BOOKKEEPING or _is_memstrata(tool):
        return None

    def text(key: str) -> str | None:
        value = arguments.get(key)
        return _cut(value, STEP_PARAM_CHARS) if isinstance(value, str) and value.strip() else None

    keys = _STEP_KEYS.get(tool)
    if keys is None:
        # Another tool (an MCP server's): its short string arguments, at most three.
        keys = tuple(
            k for k, v in arguments.items() if isinstance(v, str) and len(v) <= STEP_PARAM_CHARS
        )[:3]
    step: dict[str, JsonValue] = {"tool": tool}
    for key in keys:
        if (value := text(key)) is not None:
            step[key] = value
    return step


def _acts(call: _Call) -> bool:
    if call.tool in _EDITS or call.tool.startswith("mcp__"):
        return True
    command = call.arguments.get("command")
    return call.tool == "Bash" and isinstance(command, str) and not _reads_only(command)


def _target(call: _Call) -> str:
    """What a call acts on, so a retry of a failed call is recognised as the same step."""
    command = call.arguments.get("command")
    if call.tool == "Bash" and isinstance(command, str):
        commands = [w for w in _commands(command) if w[0] != "cd"]
        return " ".join(commands[0][:2]) if commands else command.strip()
    for key in ("file_path", "notebook_path", "path", "pattern", "url"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            return value
    return ""


def _failed(entry: TranscriptEntry) -> bool:
    return (
        entry.is_error
        or bool(_FAILED_EXIT.match(entry.text))
        or bool(_TOOL_ERROR.match(entry.text))
        or entry.text.casefold().startswith(_REJECTED)
    )


def _turns(entries: Sequence[TranscriptEntry]) -> list[_Turn]:
    """The person's turns, in order; turns Claude Code opened are left out."""
    turns: list[_Turn] = []
    current: _Turn | None = None
    for entry in entries:
        if entry.kind == "user":
            current = _Turn(prompt=entry.text)
            turns.append(current)
        elif entry.kind in ("boundary", "compaction_summary"):
            current = None
        elif current is None:
            continue
        elif entry.kind == "tool_call":
            current.calls.append(_Call(entry.tool_name or "", entry.arguments or {}))
            current.answer.clear()  # what came before a call was narration
        elif entry.kind == "tool_result":
            # Results come in the order of their calls: the first call still waiting.
            for i, call in enumerate(current.calls):
                if call.failed is None:
                    refused = entry.text.casefold().startswith(_REJECTED)
                    current.calls[i] = _Call(call.tool, call.arguments, _failed(entry), refused)
                    break
        elif entry.kind == "assistant" and entry.text.strip():
            current.answer.append(entry.text)
    return turns


def _kept_calls(calls: Sequence[_Call]) -> tuple[list[_Call] | None, FlowRuling | None]:
    """The calls of a completed flow without its resolved failures, or why it did not complete."""
    if any(c.failed is None for c in calls):
        return None, "unfinished"
    kept = []
    for i, call in enumerate(calls):
        if not call.failed:
            kept.append(call)
            continue
        target = (call.tool, _target(call))
        retried = any(
            not later.failed and (later.tool, _target(later)) == target for later in calls[i + 1 :]
        )
        if not retried:
            return None, "error"
    return kept, None


def _flow_id(request: str, calls: Sequence[_Call]) -> str:
    """The identity of a flow: the request's words and the steps' tools and targets."""
    words = sorted(set(search_words(request, max_terms=64, drop_stopwords=True)))
    shape = [f"{c.tool}:{_target(c)}" for c in calls if step_of(c.tool, c.arguments) is not None]
    digest = hashlib.sha256("\n".join([" ".join(words), *shape]).encode()).hexdigest()
    return f"claude-code:{digest[:24]}"


def _judge(turns: Sequence[_Turn], follow_up: str | None) -> FlowVerdict:
    request = _cut(turns[0].prompt, _REQUEST_CHARS)
    calls = [c for t in turns for c in t.calls]
    if any(c.refused for c in calls):
        return FlowVerdict(request, "rejected")
    if not turns[-1].answer:
        return FlowVerdict(request, "unfinished")
    kept, why = _kept_calls(calls)
    if kept is None:
        assert why is not None
        return FlowVerdict(request, why)
    steps = [s for c in kept if (s := step_of(c.tool, c.arguments)) is not None]
    if len(steps) < MIN_STEPS or not any(_acts(c) for c in kept if step_of(c.tool, c.arguments)):
        return FlowVerdict(request, "trivial")
    if follow_up is None:
        return FlowVerdict(request, "no_follow_up")
    repeated = keyword_overlap(turns[0].prompt, follow_up) >= REPEAT_OVERLAP
    if is_correction(follow_up) or repeated:
        return FlowVerdict(request, "corrected")
    approval: Approval = "explicit" if _PRAISE.match(follow_up) else "moved_on"
    outcome = _cut("\n".join(turns[-1].answer), _OUTCOME_CHARS)
    recipe: list[JsonValue] = [*steps[:MAX_STEPS]]
    playbook = FlowPlaybook(
        flow_id=_flow_id(turns[0].prompt, kept),
        request=request,
        steps=recipe,
        outcome=outcome,
        approval=approval,
    )
    return FlowVerdict(request, "promoted", playbook)


def _is_request(prompt: str) -> bool:
    words = search_words(prompt, drop_stopwords=True)
    return (
        not is_acknowledgement(prompt)
        and not is_correction(prompt)
        and len([w for w in words if w not in _STOP_REQUEST]) >= MIN_REQUEST_WORDS
    )


# search_words keeps function words when a prompt has nothing else ("do it"): none count.
_STOP_REQUEST = frozenset(("it", "this", "that", "do", "please"))


def judge_flows(entries: Sequence[TranscriptEntry]) -> list[FlowVerdict]:
    """Every flow of `entries` with its verdict, in order (see the module docstring)."""
    turns = _turns(entries)
    verdicts: list[FlowVerdict] = []
    i = 0
    while i < len(turns):
        if not _is_request(turns[i].prompt):
            if not is_acknowledgement(turns[i].prompt) or is_correction(turns[i].prompt):
                verdicts.append(FlowVerdict(_cut(turns[i].prompt, _REQUEST_CHARS), "no_request"))
            i += 1
            continue
        j = i + 1
        # "yes, go ahead" and the calls it led to continue the flow it answers.
        while (
            j < len(turns)
            and turns[j].calls
            and is_acknowledgement(turns[j].prompt)
            and not is_correction(turns[j].prompt)
        ):
            j += 1
        follow_up = turns[j].prompt if j < len(turns) else None
        verdicts.append(_judge(turns[i:j], follow_up))
        i = j
    return verdicts


def playbook_flows(entries: Sequence[TranscriptEntry]) -> list[FlowPlaybook]:
    """The flows of `entries` that earned a playbook, in order."""
    return [v.playbook for v in judge_flows(entries) if v.playbook is not None]


_RECIPE_STEP_CHARS = 200
_RECIPE_OUTCOME_CHARS = 300


def _step_line(number: int, step: JsonValue) -> str:
    if not isinstance(step, dict):
        return f"{number}. {flat(str(step), _RECIPE_STEP_CHARS)}"
    tool = flat(str(step.get("tool", "?")), 80)
    values = [f"{flat(str(v), _RECIPE_STEP_CHARS)}" for k, v in step.items() if k != "tool"]
    return f"{number}. {tool}: {' | '.join(values)}" if values else f"{number}. {tool}"


def recipe_text(project: str, playbook: Playbook, *, tokens: int) -> str:
    """A playbook as a recipe the model may follow or adapt, fenced as data, within `tokens`.

    The request and the outcome are always shown; the steps are shown in order while they fit,
    and the rest are counted ("+N more steps").
    """
    intro = fence_intro(
        project, f"Playbook #{playbook.id} (steps that worked before for a request like this one)"
    )
    head = [
        f"Asked then: {flat(playbook.user_query, _REQUEST_CHARS // 2)}",
        "Follow these steps if they fit this request; adapt them or ignore them if not.",
    ]
    tail = [f"Outcome then: {flat(playbook.outcome, _RECIPE_OUTCOME_CHARS)}"]
    # What is always shown, with room for the "+N more steps" line; when that alone is over
    # the budget, the steps are only counted.
    budget = TokenAllowance(tokens, per_item=1)
    if not budget.take(fenced(intro, [*head, f"(+{len(playbook.tool_calls)} more steps)", *tail])):
        budget = TokenAllowance(0)
    steps, left = budget.prefix(
        [_step_line(n, s) for n, s in enumerate(playbook.tool_calls, 1)], lambda line: line
    )
    more = [f"(+{left} more steps)"] if left else []
    return fenced(intro, [*head, *steps, *more, *tail])
