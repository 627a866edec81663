"""What each hook event does; each returns the context to inject, or None for nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import structlog

from memory_core.config.hooks import HookPolicy
from memory_core.domain.budget import TokenAllowance
from memory_core.domain.conversation import EntryType
from memory_core.domain.fence import fence_intro, fenced, flat
from memory_core.domain.hook_session import (
    PROMPT_SOURCE,
    SESSION_SUMMARY_KIND,
    START_SOURCE,
    TOOL_SOURCE,
)
from memory_core.domain.match import Match
from memory_core.domain.models import Layer, Memory, SearchHit, SearchMode
from memory_core.domain.rules import condition_phrase, rule_applies
from memory_core.domain.tool_calls import TOOL_RULE_OVERLAP, rule_mark, tool_situation
from memory_core.errors import EmbeddingUnavailableError, InvalidQueryError, StorageError
from server.hooks.payload import HookInputError, HookPayload, ToolDenial
from server.hooks.screen import screen_context
from server.hooks.services import HookServices

if TYPE_CHECKING:
    from pathlib import Path

    from memory_core.domain.capture_place import CapturePlace, TranscriptText

__all__ = [
    "STOP_ASK",
    "pre_compact",
    "pre_tool_use",
    "recall_lines",
    "session_end",
    "session_start",
    "stop",
    "user_prompt_submit",
]

log = structlog.get_logger(__name__)

# Claude Code drops additionalContext above 10,000 characters; stay clear of it.
MAX_CONTEXT_CHARS = 9500
_MAX_QUERY_CHARS = 1000


async def _note(svc: HookServices, project: str, session_id: str, text: str, source: str) -> None:
    """Record injected text as a context entry of the session, so its stats show it.

    Trigger: the store is busy or refuses the entry. Why: the text is already decided and the
    person's session matters more than the record. Outcome: a warning in the log.
    """
    try:
        await svc.conversations.start(project, session_id)
        await svc.conversations.add_entry(
            project, session_id, type=EntryType.CONTEXT, content=text, source=source
        )
    except StorageError as exc:
        log.warning("hooks.note_failed", session_id=session_id, error=str(exc))


async def _adopt(svc: HookServices, payload: HookPayload) -> None:
    """Give a checkout its memories stored under the folder name of an earlier version.

    Only while the repository's project is still empty, and only when that is safe
    (server.project.adoption): one indexed lookup once the project is in use.
    """
    from server.project.adoption import adopt_on_first_use

    try:
        moved = await adopt_on_first_use(svc.project_moves, svc.settings.project_scope, payload.cwd)
    except StorageError as exc:
        log.warning("hooks.adoption_failed", error=str(exc))
        return
    if moved is not None:
        log.info("hooks.project_adopted", adoption=str(moved))


async def session_start(svc: HookServices, payload: HookPayload) -> str | None:
    """The project's context, built once per session and re-injected as it was afterwards."""
    policy = svc.settings.hooks
    if not policy.session_start:
        return None
    await _adopt(svc, payload)
    project = svc.settings.default_project(payload.cwd)
    state = await svc.hook_sessions.get(project, payload.session_id)
    if state is not None and state.start_context is not None:
        return state.start_context  # resume, compact, or a repeated start: the same text
    built = await svc.start.build(
        project,
        user=policy.user_id,
        screen=screen_context(payload.cwd),
        session_id=payload.session_id,
        token_budget=policy.start_tokens,
        max_chars=MAX_CONTEXT_CHARS,
    )
    if built.empty:
        return None
    try:
        saved = await svc.hook_sessions.save_start(
            project, payload.session_id, built.text, built.tokens, svc.clock.now()
        )
    except StorageError as exc:
        # Locked or read-only store: the context is still worth injecting, uncached.
        log.warning("hooks.start_not_cached", session_id=payload.session_id, error=str(exc))
        return built.text
    if saved.start_context != built.text:
        return saved.start_context  # another start of this session won the race
    try:
        await svc.hook_sessions.add_injected(
            project, payload.session_id, built.memory_ids, svc.clock.now()
        )
    except StorageError as exc:
        log.warning("hooks.injected_not_recorded", error=str(exc))
    await _note(svc, project, payload.session_id, built.text, START_SOURCE)
    return built.text


_LINE_MAX_CHARS = 700


def _hit_line(memory: Memory) -> str:
    """One injected memory: its id, layer, who said it and when, then its text, on one line."""
    about = [memory.layer.value]
    if memory.author:
        about.append(flat(memory.author, 40))
    if memory.layer is Layer.EPISODIC:
        about.append(f"{memory.happened_at:%Y-%m-%d}")
    body = flat(memory.content, _LINE_MAX_CHARS)
    if memory.key:
        key = flat(memory.key, 160)
        head = condition_phrase(key) if memory.layer is Layer.PROCEDURAL else key
        body = f"{head}: {body}"
    return f"- #{memory.id} [{', '.join(about)}] {body}"


def _eligible(hit: SearchHit, seen: set[int], session_id: str, prompt: str) -> bool:
    """Not shown before, not this session's own words, not a digest, a rule only if it applies."""
    memory = hit.memory
    if memory.id in seen or memory.session_id == session_id:
        return False  # the model has it already
    if memory.metadata.get("kind") == SESSION_SUMMARY_KIND:
        return False  # digests repeat what was said; the session-start context shows the last
    if memory.layer is Layer.PROCEDURAL:
        return rule_applies(memory.key or "", prompt)
    return hit.signals.match is not Match.WEAK


def _select(
    hits: Sequence[SearchHit],
    seen: set[int],
    session_id: str,
    prompt: str,
    policy: HookPolicy,
    older: Mapping[int, int] | None = None,
) -> tuple[list[int], list[str]]:
    """Hits that match strongly (partial ones within a smaller budget), at most N, in budget.

    The floor is absolute (the match strength, domain.match): when nothing in the store is
    about the prompt, nothing is injected, however the hits rank among themselves. A hit a
    newer close hit follows (`older`, search's SearchResult.older: a correction written
    without `supersedes`) is left out: the model gets the current version of a fact.
    """
    chosen: list[int] = []
    lines: list[str] = []
    budget = TokenAllowance(policy.prompt_tokens, per_item=1)  # + the newline joining lines
    partial = TokenAllowance(min(policy.prompt_partial_tokens, policy.prompt_tokens), per_item=1)
    for hit in hits:
        if older and hit.memory.id in older:
            continue
        if not _eligible(hit, seen, session_id, prompt):
            continue
        if hit.signals.relevance < policy.prompt_min_relevance:
            continue
        line = _hit_line(hit.memory)
        strong = hit.signals.match is Match.STRONG or hit.memory.layer is Layer.PROCEDURAL
        if not strong and not partial.take(line):
            continue
        if not budget.take(line):
            continue
        chosen.append(hit.memory.id)
        lines.append(line)
        if len(chosen) >= policy.prompt_max_hits:
            break
    return chosen, lines


async def _recall(
    svc: HookServices, project: str, query: str, seen: set[int], session_id: str
) -> tuple[list[int], list[str]]:
    """The memories matching `query` as `_select` keeps them (ids and lines); marks nothing."""
    from memory_core.services.memories import SearchRequest  # only the recalling hooks search

    policy = svc.settings.hooks
    if svc.embedder is not None and policy.prompt_semantic_wait > 0:
        # Not ready in time: keyword search this time.
        with contextlib.suppress(EmbeddingUnavailableError):
            await svc.embedder.wait(policy.prompt_semantic_wait)
    mode = (
        SearchMode.HYBRID if svc.embedder is not None and svc.embedder.ready else SearchMode.KEYWORD
    )
    try:
        result = await svc.memories.search(
            SearchRequest(
                project=project,
                query=query[:_MAX_QUERY_CHARS],
                mode=mode,
                limit=min(50, policy.prompt_max_hits * 4),
                mark_used=False,
                versions=True,
            )
        )
    except InvalidQueryError:
        return [], []  # no searchable word in it
    return _select(result.hits, seen, session_id, query, policy, result.older)


async def recall_lines(svc: HookServices, project: str, query: str) -> list[str]:
    """The lines `_select` keeps for `query`, for a context that starts with nothing shown."""
    return (await _recall(svc, project, query, set(), ""))[1]


async def user_prompt_submit(svc: HookServices, payload: HookPayload) -> str | None:
    """Memories that match the prompt strongly, never twice in a session (see `_select`).

    The search marks nothing as used: what the model is shown counts as used only when the
    transcript later shows it acting on it (memory_core.domain.usage, at capture).
    """
    policy = svc.settings.hooks
    prompt = (payload.prompt or "").strip()
    if not policy.user_prompt_submit or len(prompt) < policy.prompt_min_chars:
        return None
    project = svc.settings.default_project(payload.cwd)
    state = await svc.hook_sessions.get(project, payload.session_id)
    seen = set(state.injected) if state is not None else set()
    chosen, lines = await _recall(svc, project, prompt, seen, payload.session_id)
    if chosen:
        fresh = set(
            await svc.hook_sessions.add_injected(
                project, payload.session_id, chosen, svc.clock.now()
            )
        )
        lines = [line for memory_id, line in zip(chosen, lines, strict=True) if memory_id in fresh]
    parts = (
        [fenced(fence_intro(project, "Memories that match this prompt"), lines)] if lines else []
    )
    recipe = await _recipe(svc, project, prompt, payload.session_id)
    # Both budgets together stay far under Claude Code's cap; were they not, the recipe goes
    # (never a cut through a fence).
    if recipe is not None and sum(len(p) + 1 for p in parts) + len(recipe) <= MAX_CONTEXT_CHARS:
        parts.append(recipe)
    if not parts:
        return None
    text = "\n".join(parts)
    await _note(svc, project, payload.session_id, text, PROMPT_SOURCE)
    return text


async def _recipe(svc: HookServices, project: str, prompt: str, session_id: str) -> str | None:
    """The user's playbook that matches the prompt strongly, once a session, or None."""
    policy = svc.settings.hooks
    if not policy.playbook_injection:
        return None
    from memory_core.services.playbook_promotion import playbook_user

    user = playbook_user(policy.user_id, policy.user_name)
    try:
        return await svc.playbooks.recipe(
            project, user, prompt, session_id=session_id, tokens=policy.playbook_tokens
        )
    except StorageError:
        log.warning("hooks.recipe_failed", exc_info=True)  # the memories still go in
        return None


_RULES_SCAN = 200
_TOOL_RULES_MAX = 3


def _blocking(rule: Memory) -> bool:
    """A rule the person marked blocking (metadata `blocking: true`)."""
    return rule.metadata.get("blocking") is True


async def pre_tool_use(svc: HookServices, payload: HookPayload) -> str | None:
    """The procedural rules whose condition this tool call meets, once per rule per session.

    "when committing: run make lint" reaches the model as it runs `git commit`, not only in
    the session-start context hours before. Matched by words (domain.rules.rule_applies on
    domain.tool_calls.tool_situation); a rule shown at a call is shown again only when it
    changed. The rule is context for the model, which decides; the call is denied only when
    a matching rule is marked blocking and `pre_tool_use_block` allows blocking (`_deny`).
    """
    policy = svc.settings.hooks
    situation = tool_situation(payload.tool_name or "", payload.tool_input)
    if not policy.pre_tool_use or situation is None:
        return None
    project = svc.settings.default_project(payload.cwd)
    rules = await svc.memories.repo.list_recent(project, Layer.PROCEDURAL, limit=_RULES_SCAN)
    matched = [
        rule
        for rule in rules
        if rule_applies(rule.key or "", situation, min_overlap=TOOL_RULE_OVERLAP)
    ]
    blocking = [rule for rule in matched if _blocking(rule)][:_TOOL_RULES_MAX]
    if blocking and policy.pre_tool_use_block:
        return await _deny(svc, payload, project, blocking)
    matched = matched[:_TOOL_RULES_MAX]
    if not matched:
        return None
    marks = {rule_mark(r.id, r.content_hash, r.key): r for r in matched}
    fresh = await svc.hook_sessions.add_tool_rules(
        project, payload.session_id, list(marks), svc.clock.now()
    )
    shown = [marks[m] for m in fresh]
    if not shown:
        return None
    await svc.hook_sessions.add_injected(
        project, payload.session_id, [r.id for r in shown], svc.clock.now()
    )
    intro = fence_intro(
        project, f"Rules that apply to this {flat(payload.tool_name or '', 60)} call"
    )
    text = fenced(intro, [_hit_line(rule) for rule in shown])
    await _note(svc, project, payload.session_id, text, TOOL_SOURCE)
    return text


async def _deny(
    svc: HookServices, payload: HookPayload, project: str, rules: Sequence[Memory]
) -> ToolDenial:
    """Deny the call for its blocking rules: the reason says why, the rules follow as data.

    Every matching call is denied, not only the first of the session: a blocking rule is a
    gate the person set (mark only rules that forbid a call as blocking). The reason is the
    rule fenced and flattened like every injection, so its text cannot pose as Claude Code's
    or the person's words.
    """
    tool = flat(payload.tool_name or "", 60)
    why = (
        f"memstrata denied this {tool} call: a rule of this project that the person marked "
        "blocking applies to it (setting hooks.pre_tool_use_block). Do not retry the same call; "
        "do what the rule says, or ask the person."
    )
    text = "\n".join(
        [why, fenced(fence_intro(project, "The blocking rule"), [_hit_line(r) for r in rules])]
    )
    try:
        await svc.hook_sessions.add_injected(
            project, payload.session_id, [r.id for r in rules], svc.clock.now()
        )
    except StorageError as exc:
        log.warning("hooks.injected_not_recorded", error=str(exc))  # the denial stands
    await _note(svc, project, payload.session_id, text, TOOL_SOURCE)
    log.info("hooks.tool_denied", tool=tool, rules=[r.id for r in rules])
    return ToolDenial(text)


async def _record(svc: HookServices, payload: HookPayload, *, inline: float = 0) -> None:
    """Record the transcript's lines after the capture's place (a bounded read, off the loop).

    `inline` > 0: record for about that many seconds here (a batch is never cut), then hand
    the rest to a process of its own (`_finish_detached`), which goes on from the place.
    """
    from server.hooks.transcript_file import read_capture

    path = payload.transcript_path
    if path is None:
        raise HookInputError("transcript_path is missing")

    async def read(place: CapturePlace) -> TranscriptText:
        return await read_capture(path, place)

    project = svc.settings.default_project(payload.cwd)
    stop = _deadline(inline) if inline > 0 else None
    result = await svc.recorder.record(project, payload.session_id, read, summarize=True, stop=stop)
    if not result.complete:
        _finish_detached(payload)  # it promotes playbooks once the capture is complete
        log.info(
            "hooks.capture_handed_on", session_id=payload.session_id, entries=result.entries_added
        )
        return
    log.info(
        "hooks.recorded",
        hook_event=payload.event,
        session_id=payload.session_id,
        entries=result.entries_added,
        skipped=result.entries_skipped,
        malformed_lines=result.malformed_lines,
    )
    if svc.settings.hooks.playbook_promotion:
        await _promote(svc, project, path)


# Tells the process a capture is handed to that it finishes the capture (HookPolicy's
# session_end_inline set to 0: no handing on again).
_INLINE_ENV = "MEMSTRATA_HOOKS__SESSION_END_INLINE"


def _deadline(seconds: float) -> Callable[[], bool]:
    """True once `seconds` have passed from now."""
    import time

    end = time.monotonic() + seconds
    return lambda: time.monotonic() >= end


def _finish_detached(payload: HookPayload) -> None:
    """The rest of a capture in a process of its own, in a session of its own.

    Claude Code's cancel of this hook (or its exit) does not reach it. It records from the
    place this one left (writing nothing twice, TranscriptRecorder), with no inline budget,
    then asks the warm server to embed (server.hooks.entry); killed, the next capture goes on.
    """
    import json
    import os
    import subprocess
    import sys

    command = "session-end" if payload.event == "SessionEnd" else "pre-compact"
    child = subprocess.Popen(
        [sys.executable, "-m", "server", "hook", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=os.environ | {_INLINE_ENV: "0"},
    )
    data = {
        "session_id": payload.session_id,
        "transcript_path": str(payload.transcript_path),
        "hook_event_name": payload.event,
    }
    if payload.cwd is not None:
        data["cwd"] = str(payload.cwd)
    assert child.stdin is not None
    child.stdin.write(json.dumps(data).encode())
    child.stdin.close()


# How much of the transcript's end playbook promotion judges. A flow's approval is the prompt
# after it, which may come in a later capture than the flow, so promotion reads the recent
# transcript again (it is idempotent: a flow promoted before is unchanged), not only the new
# lines; a flow that ended more than this before the capture is not judged again.
_PROMOTION_READ_MAX = 4_000_000


async def _promote(svc: HookServices, project: str, path: Path) -> None:
    """Approved flows of the transcript's recent part kept as the user's playbooks."""
    from memory_core.domain.transcript import read_transcript
    from memory_core.services.playbook_promotion import playbook_user
    from server.hooks.transcript_file import read_tail

    policy = svc.settings.hooks
    lines = await read_tail(path, "transcript_path", _PROMOTION_READ_MAX)
    user = playbook_user(policy.user_id, policy.user_name)
    try:
        await svc.playbooks.promote(project, user, read_transcript(lines).entries)
    except StorageError:
        log.warning("hooks.promotion_failed", exc_info=True)  # what was recorded stays


async def pre_compact(svc: HookServices, payload: HookPayload) -> None:
    """Record the transcript before Claude Code compacts it."""
    if svc.settings.hooks.pre_compact:
        await _record(svc, payload)


async def session_end(svc: HookServices, payload: HookPayload) -> None:
    """Record the rest of the transcript and the session's summary."""
    if svc.settings.hooks.session_end:
        await _record(svc, payload, inline=svc.settings.hooks.session_end_inline)


# What the Stop hook says to the model (one sentence, ~55 tokens): Claude Code shows it to the
# model as the reason the turn goes on, so the request is visible in the session, not hidden.
STOP_ASK = (
    "memstrata: if this work settled something worth keeping for later sessions (a decision "
    "and why, a fix, a preference, a rule), store it now in one or two short notes with "
    "memstrata's `append` or `learn` tool; otherwise do nothing and stop."
)
# The most of the transcript one Stop reads (from its place): a flow is counted, not recorded.
_STOP_READ_MAX = 8_000_000


def _saves(tool_name: str | None) -> bool:
    """A memstrata tool that stores what was learned (plugin or settings naming)."""
    name = tool_name or ""
    return "memstrata" in name and name.rsplit("__", 1)[-1] in ("append", "append_many", "learn")


async def stop(svc: HookServices, payload: HookPayload) -> str | None:
    """Ask the model, at most once per flow of substance, to store what it learned.

    A flow is what happened since the Stop hook last asked, or since the model last stored a
    memory itself (`append`, `append_many` or `learn`): it has substance when it holds at
    least `stop_min_prompts` prompts and `stop_min_tool_calls` tool calls. A Stop that Claude
    Code runs while already continuing because of a Stop hook (`stop_hook_active`) never asks,
    so the hook cannot loop. Returns the request, or None to let the turn end.
    """
    policy = svc.settings.hooks
    if not policy.stop_ask or payload.stop_hook_active or payload.transcript_path is None:
        return None
    project = svc.settings.default_project(payload.cwd)
    state = await svc.hook_sessions.get(project, payload.session_id)
    offset = state.stop_offset if state is not None else 0
    from memory_core.domain.transcript import read_transcript
    from server.hooks.transcript_file import read_after

    lines, end = await read_after(payload.transcript_path, offset, _STOP_READ_MAX)

    entries = read_transcript(lines).entries
    saved = any(e.kind == "tool_call" and _saves(e.tool_name) for e in entries)
    prompts = sum(1 for e in entries if e.kind == "user")
    calls = sum(1 for e in entries if e.kind == "tool_call")
    ask = prompts >= policy.stop_min_prompts and calls >= policy.stop_min_tool_calls
    if saved or ask:
        await svc.hook_sessions.save_stop_offset(project, payload.session_id, end, svc.clock.now())
    if saved or not ask:
        return None
    log.info("hooks.stop_asked", session_id=payload.session_id, prompts=prompts, tool_calls=calls)
    return STOP_ASK
