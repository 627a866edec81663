"""What each hook event does; each returns the context to inject, or None for nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import structlog

from memory_core.domain.budget import TokenAllowance
from memory_core.domain.conversation import EntryType
from memory_core.domain.hook_session import PROMPT_SOURCE, START_SOURCE
from memory_core.domain.models import SearchHit, SearchMode
from memory_core.errors import EmbeddingUnavailableError, InvalidQueryError, StorageError
from memory_core.hook_config import HookPolicy
from server.hooks.payload import HookInputError, HookPayload
from server.hooks.screen import screen_context
from server.hooks.services import HookServices

__all__ = ["pre_compact", "session_end", "session_start", "user_prompt_submit"]

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


async def session_start(svc: HookServices, payload: HookPayload) -> str | None:
    """The project's context, built once per session and re-injected as it was afterwards."""
    policy = svc.settings.hooks
    if not policy.session_start:
        return None
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


def _hit_line(layer: str, memory_id: int, key: str | None, content: str) -> str:
    body = " ".join(content.split())
    if key:
        body = f"{key}: {body}"
    return f"- [{layer}, #{memory_id}] {body}"


def _select(
    hits: Sequence[SearchHit], seen: set[int], policy: HookPolicy
) -> tuple[list[int], list[str]]:
    """Hits above the floor, not injected before, at most N, within the token budget."""
    chosen: list[int] = []
    lines: list[str] = []
    budget = TokenAllowance(policy.prompt_tokens, per_item=1)  # + the newline joining lines
    for hit in hits:
        memory = hit.memory
        if memory.id in seen or hit.signals.relevance < policy.prompt_min_relevance:
            continue
        line = _hit_line(memory.layer.value, memory.id, memory.key, memory.content)
        if not budget.take(line):
            continue
        chosen.append(memory.id)
        lines.append(line)
        if len(chosen) >= policy.prompt_max_hits:
            break
    return chosen, lines


async def user_prompt_submit(svc: HookServices, payload: HookPayload) -> str | None:
    """Memories matching the prompt, above the floor, never twice in a session."""
    policy = svc.settings.hooks
    prompt = (payload.prompt or "").strip()
    if not policy.user_prompt_submit or len(prompt) < policy.prompt_min_chars:
        return None
    from memory_core.services.memories import SearchRequest  # only this hook searches

    project = svc.settings.default_project(payload.cwd)
    if svc.embedder is not None and policy.prompt_semantic_wait > 0:
        # Not ready in time: keyword search this time.
        with contextlib.suppress(EmbeddingUnavailableError):
            await svc.embedder.wait(policy.prompt_semantic_wait)
    state = await svc.hook_sessions.get(project, payload.session_id)
    seen = set(state.injected) if state is not None else set()
    mode = (
        SearchMode.HYBRID if svc.embedder is not None and svc.embedder.ready else SearchMode.KEYWORD
    )
    try:
        result = await svc.memories.search(
            SearchRequest(
                project=project,
                query=prompt[:_MAX_QUERY_CHARS],
                mode=mode,
                limit=min(50, policy.prompt_max_hits * 2),
            )
        )
    except InvalidQueryError:
        return None  # no searchable word in the prompt
    chosen, lines = _select(result.hits, seen, policy)
    if not chosen:
        return None
    fresh = set(
        await svc.hook_sessions.add_injected(project, payload.session_id, chosen, svc.clock.now())
    )
    lines = [line for memory_id, line in zip(chosen, lines, strict=True) if memory_id in fresh]
    if not lines:
        return None
    text = "\n".join(
        [f"memstrata recalled these memories of project {project} for this prompt:", *lines]
    )[:MAX_CONTEXT_CHARS]
    await _note(svc, project, payload.session_id, text, PROMPT_SOURCE)
    return text


async def _record(svc: HookServices, payload: HookPayload) -> None:
    path = payload.transcript_path
    if path is None:
        raise HookInputError("transcript_path is missing")
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            lines = handle.read().splitlines(keepends=True)
    except FileNotFoundError:
        raise HookInputError("transcript_path names no file") from None
    except OSError as exc:
        raise HookInputError(f"transcript_path cannot be read ({exc.strerror})") from None
    project = svc.settings.default_project(payload.cwd)
    result = await svc.recorder.record(project, payload.session_id, lines, summarize=True)
    log.info(
        "hooks.recorded",
        hook_event=payload.event,
        session_id=payload.session_id,
        entries=result.entries_added,
        skipped=result.entries_skipped,
        malformed_lines=result.malformed_lines,
    )


async def pre_compact(svc: HookServices, payload: HookPayload) -> None:
    """Record the transcript before Claude Code compacts it."""
    if svc.settings.hooks.pre_compact:
        await _record(svc, payload)


async def session_end(svc: HookServices, payload: HookPayload) -> None:
    """Record the rest of the transcript and the session's summary."""
    if svc.settings.hooks.session_end:
        await _record(svc, payload)
