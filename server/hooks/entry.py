"""Run one hook: read stdin, answer on stdout, exit 0 whatever happens.

Trigger: anything goes wrong (bad input, configuration, storage, the time budget). Why: a hook
that fails loudly or slowly breaks the person's Claude Code session, and memory is a helper,
not a gate. Outcome: no stdout, one line on stderr, exit status 0, within the budget. A run
that is over budget is abandoned, not cancelled: cancelling a statement waiting on a locked
database would wait for its busy timeout, so the process exits with os._exit and SQLite rolls
back whatever was unfinished (committed work, e.g. recorded transcript lines, stays).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from server.early_env import uses_postgres

if TYPE_CHECKING:  # argparse costs ~15 ms of a hook's budget; only `--help` listing needs it
    import argparse

__all__ = ["add_parser", "run"]

_USAGE = """\
usage: memstrata hook {session-start,user-prompt-submit,pre-compact,session-end,stop,
                      pre-tool-use,subagent-start,subagent-stop}

Run by Claude Code as a `type: "command"` hook: reads the hook's JSON on stdin, prints
{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}} for SessionStart and
UserPromptSubmit (and PreToolUse, SubagentStart) when there is something to inject,
{"decision": "block", "reason": ...} for Stop when it asks the model to store what it learned,
and always exits 0."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """List `hook` in `memstrata --help` (server.cli runs it before argparse)."""
    import argparse

    parser = sub.add_parser(
        "hook",
        help="a Claude Code hook: inject memory at session start and per prompt, record "
        "transcripts",
        description=_USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "event",
        choices=(
            "session-start",
            "user-prompt-submit",
            "pre-compact",
            "session-end",
            "stop",
            "pre-tool-use",
            "subagent-start",
            "subagent-stop",
        ),
    )


def _fail(command: str, reason: str) -> None:
    line = " ".join(str(reason).split())[:500]
    sys.stderr.write(f"memstrata hook {command}: {line}\n")


async def _bounded(work: Awaitable[str | None], seconds: float) -> str | None:
    import asyncio

    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        raise TimeoutError(f"gave up after {seconds:g} s (is the database locked?)")
    return task.result()


def _answer(command: str, raw: str) -> str | None:
    """The additionalContext to print, or None; raises on any failure."""
    from pydantic import ValidationError

    from server.hooks.payload import parse_payload

    payload = parse_payload(raw, command)
    from server.settings import Settings, SettingsError

    try:
        settings = Settings()
    except (ValidationError, SettingsError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(str(p) for p in first["loc"]) if first else ""
        raise ValueError(
            f"invalid MEMSTRATA_* configuration {where}: {first['msg'] if first else exc}"
        ) from None
    from server.logging import configure_logging

    # Quiet unless asked: Claude Code shows a hook's stderr to the person in verbose mode.
    configure_logging("DEBUG" if settings.log_level == "DEBUG" else "ERROR", settings.log_format)
    from server.hooks import events, subagents
    from server.hooks.services import open_hook_services

    handlers: dict[str, Callable[[Any, Any], Awaitable[str | None]]] = {
        "SessionStart": events.session_start,
        "UserPromptSubmit": events.user_prompt_submit,
        "PreCompact": events.pre_compact,
        "SessionEnd": events.session_end,
        "Stop": events.stop,
        "PreToolUse": events.pre_tool_use,
        "SubagentStart": subagents.subagent_start,
        "SubagentStop": subagents.subagent_stop,
    }
    # They write what they read (the transcript, a sub-agent's result): the longer budget.
    recording = payload.event in ("PreCompact", "SessionEnd", "SubagentStop")
    semantic = payload.event == "UserPromptSubmit" and settings.hooks.prompt_semantic_wait > 0

    async def work() -> str | None:
        async with open_hook_services(settings, semantic=semantic, recording=recording) as svc:
            return await handlers[payload.event](svc, payload)

    budget = settings.hooks.record_timeout if recording else settings.hooks.timeout
    import asyncio

    loop = asyncio.new_event_loop()
    # Not closed: an abandoned run may still hold a task; the process ends right after.
    return loop.run_until_complete(_bounded(work(), budget))


# _warm's answer when no warm server answered: the hook then runs in this process.
_NO_WARM = object()
_RECORDING = ("pre-compact", "session-end", "subagent-stop")
# The hooks a warm server answers (server.hooks.listener OPS): those that search.
_WARM = ("user-prompt-submit", "pre-tool-use", "subagent-start")
_INDEX_WAIT = 0.2  # seconds: the server answers `index` at once, the embedding runs after


def _warm(command: str, raw: str) -> str | object | None:
    """The prompt hook's context from the warm `memstrata serve` (server.hooks.warm).

    Trigger: UserPromptSubmit. Why: the server holds the model warm, so its search matches
    meaning as well as words, within a prompt's budget. Outcome: the context (None: nothing
    to inject) or _NO_WARM when none answered (off, no server, stale socket, too slow, an
    error), after which the hook runs its own keyword search as before. Imports nothing
    but the standard library, so a warm hook never loads pydantic or structlog.
    """
    if command not in _WARM:
        return _NO_WARM
    from server.hooks.warm import WarmUnavailable, ask

    try:
        data = json.loads(raw)
    except ValueError:
        return _NO_WARM  # the direct path says what is wrong with it
    if not isinstance(data, dict):
        return _NO_WARM
    try:
        answer = ask(command, os.environ, data)
    except WarmUnavailable:
        return _NO_WARM
    context = answer.get("context")
    if not isinstance(context, str) or not context:
        return None
    if answer.get("deny") is True:
        from server.hooks.payload import ToolDenial

        return ToolDenial(context)  # a blocking rule (events.pre_tool_use)
    return context


def _index_on_warm_server() -> None:
    """Ask the warm server to embed the rows just recorded (fire and forget).

    A recording hook stores its rows without vectors (it loads no model); the server's
    backfill embeds them now rather than at its next start, so they are found by meaning.
    """
    from server.hooks.warm import WarmUnavailable, ask

    # No server: the next one's start-up backfill embeds them.
    with contextlib.suppress(WarmUnavailable):
        ask("index", os.environ, wait=_INDEX_WAIT)


def _output(command: str, context: str | None) -> str | None:
    """What the hook prints for Claude Code: the context to inject, a Stop's request, or None."""
    if not context:
        return None
    event = {
        "session-start": "SessionStart",
        "user-prompt-submit": "UserPromptSubmit",
        "pre-tool-use": "PreToolUse",
        "subagent-start": "SubagentStart",
    }.get(command)
    from server.hooks.payload import ToolDenial

    answer: dict[str, object]
    if event == "PreToolUse" and isinstance(context, ToolDenial):
        # Claude Code denies the call and tells the model the reason (its documented
        # PreToolUse output; exit status 0).
        answer = {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": str(context),
            }
        }
    elif event is not None:
        answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    elif command == "stop":
        # Claude Code goes on with `reason` as what the model is told next.
        answer = {"decision": "block", "reason": context}
    else:
        return None
    return json.dumps(answer, ensure_ascii=False)


def _may_use_tls(command: str, environ: Mapping[str, str]) -> bool:
    """Whether this hook may open a TLS connection: a PostgreSQL store, or more than a start.

    SessionStart on the SQLite file only reads and writes the file and runs `git status`;
    the other hooks may load the embedding model or call the summarizer endpoint.
    """
    return command != "session-start" or uses_postgres(environ)


def run(argv: Sequence[str]) -> NoReturn:
    """`memstrata hook EVENT`: the whole command; never returns, always exits 0."""
    # structlog renders with rich when it can import it; a hook needs neither (and the import
    # costs tens of milliseconds of the budget), so rich is made unimportable in this process.
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
    # structlog's deprecated thread-local context loads greenlet (a C extension) when it can;
    # memstrata binds context with contextvars, and no hook uses greenlets.
    sys.modules.setdefault("greenlet", None)  # type: ignore[arg-type]
    command = argv[0] if argv else ""
    if not _may_use_tls(command, os.environ):
        # asyncio imports ssl (~7 ms cold) for TLS connections, and handles its absence;
        # session-start on the SQLite file opens none, so it does without.
        sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]
    if command in ("-h", "--help") or not argv:
        sys.stdout.write(_USAGE + "\n")
        sys.stdout.flush()
        os._exit(0)
    out = None
    try:
        if sys.stdin is None or sys.stdin.isatty():
            raise ValueError("stdin is a terminal; Claude Code pipes the hook's JSON into it")
        raw = sys.stdin.read()
        warm = _warm(command, raw)
        if warm is _NO_WARM:
            context = _answer(command, raw)
            if command in _RECORDING:
                _index_on_warm_server()
        else:
            context = warm if isinstance(warm, str) else None
        out = _output(command, context)
    except BaseException as exc:
        _fail(command, f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc))
        out = None
    try:
        if out is not None:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass  # Claude Code went away: nothing to tell it
    os._exit(0)
