"""The whole Claude Code loop on LoCoMo: capture through the hooks, then recall per prompt.

    python -m bench.hook_replay --no-server --json /tmp/replay.json   # dev split, keyword hooks
    python -m bench.hook_replay --conversations 1 --questions 40       # a quick run
    python -m bench.hook_replay --baseline bench/results/locomo.json   # R@10 of an earlier run

For each conversation of DIR (../shared/bench README format) the bench makes a directory of
its own, named after the conversation and holding a git repository, so that with
MEMSTRATA_PROJECT_SCOPE=git (as hooks/hooks.json runs the hooks) each conversation is a
project of its own, named after it (server.project.scope's rule, which the bench also uses to
find it); one MEMSTRATA_DB serves the whole run. Each LoCoMo session is written as a
Claude Code transcript (one JSONL file, lines in Claude Code's own shape) and replayed through
the installed `memstrata hook` commands, each a process with Claude Code's JSON on stdin:
session-start, then session-end (with --pre-compact, pre-compact first, when half the session
is written). Then every question is the prompt of a UserPromptSubmit in a fresh session of its
conversation's project (session-start first, as Claude Code does), and the bench scores what
the hook injected.

Speakers to roles: LoCoMo has two named people; the conversation's first speaker is the user
and the second the assistant (--user-speaker second swaps them). A Claude Code transcript
alternates a person and a model, and so does a LoCoMo session, so each speaker keeps one
role for the whole conversation; consecutive turns of one speaker (none in dev) merge into
one message. Each turn is written as "<Speaker>: <text>" (--no-names: the text alone),
because the names are part of what was said and the questions name them ("When did Caroline
go to ..."); a shared photo's caption is appended as LoCoMo's own RAG did, "[shares
<caption>]" (bench.locomo.render, its default). Some sessions open with the second speaker,
so their transcript opens with an assistant line; the lines are kept in LoCoMo's order. The
capture hooks run with MEMSTRATA_HOOKS__USER_NAME and __ASSISTANT_NAME set to the two names
(--no-authors: the roles' defaults, "user" and "assistant"), as a person who set their name
would run them, so a memory's author is who said it, as in bench.locomo's store.

What is measured, per LoCoMo category and overall:
- injection recall: the share of questions for which an evidence turn reached the context the
  prompt hook injected. A turn is reached when a memory id shown there (any `#<digits>`
  token, so a change of layout keeps working) is a memory holding the turn, or, failing that,
  when the turn's text itself is in the context. A memory holds a turn when its content
  (whitespace normalised) contains the turn's text; a turn shorter than 5 words must appear
  with its speaker ("Caroline: Thanks!"), or any memory saying "Thanks!" would hold it; a
  turn of 40 words or more that capture cut into chunks is held by a chunk that contains
  whole 8-word runs of it covering at least half its words. The map memory -> turns is
  read from the store after the run (MemoryService.browse, which marks nothing as used).
- start and session recall (extra): the same for the session-start context of the question's
  session, and for either context (the prompt hook never repeats what the start showed).
- injected tokens per prompt (memory_core.domain.tokens.count_tokens; 0 when the hook
  injected nothing), median and p95; the same for the session-start context of the question
  sessions (`start_*`, not part of the targets).
- hook latency: the wall time of the user-prompt-submit process, p50 and p95.
- `search` R@10 over the captured store, in-process (MemoryService.search, hybrid, the
  question plus bench.locomo.phrasings, hits not marked as used), scored as
  ../shared/bench/score.py does, next to bench.locomo's R@10 on a store of the same turns
  written directly: bench.locomo.main run in-process on the same conversations with its
  defaults, or the file given by --baseline (a results JSONL of ranked ids, scored here on the
  same questions, or bench.locomo's --json output, whose per-category figures are taken as
  they are). A hit stands for every turn its memory holds, in turn order (a session summary
  quoting several turns stands for all of them, as an identical turn does in bench.locomo).
  The store is opened with bench.store's frozen clock, which is earlier than the hooks' writes;
  a time in the future counts as just now, so every memory has the same tier and recency, as
  in bench.locomo.

--keep DIR keeps the run: the store (memory.db), the transcripts, the server's log, and
questions.jsonl with each question's contexts, the evidence reached and its R@10.

With a server (the default) a `memstrata serve` (stdio) is started with the hooks' environment
and its stdin held open, as Claude Code holds it, and the run waits for its MCP initialize
answer (and for --server-socket, when given) before the first hook; --no-server leaves it out,
so the prompt hook searches by keyword in its own process.

The data is licensed CC BY-NC 4.0 and is read in place, never copied into this repository.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from bench import locomo
from bench.store import open_bench_store
from memory_core.domain.tokens import count_tokens

DEFAULT_DATA = locomo.DEFAULT_DATA
CLAUDE_CODE_VERSION = "2.1.332"
SHORT_TURN_WORDS = 5  # below this, a turn is found only with its speaker's name
CHUNKED_TURN_WORDS = 40  # from this on, a chunk holding half the turn counts
RUN_WORDS = 8  # the runs a chunk must hold whole
_IDS = uuid.UUID("5b2f3c1e-8d4a-4e6b-9f0a-1c2d3e4f5a6b")  # uuid5 namespace: stable ids per run
# The kinds bench.locomo.phrasings knows (its --phrasings choices).
PHRASING_KINDS = ("none", "clauses", "entities", "keywords", "all")
_SHOWN_ID = re.compile(r"(?<!\w)#(\d+)(?!\w)")


# --- the data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One transcript message: a speaker's consecutive turns, in one role."""

    role: str  # "user" | "assistant"
    text: str
    turn_ids: tuple[str, ...]


@dataclass
class Conversation:
    """One LoCoMo conversation: its turns by session, in order, and its questions."""

    id: str
    turns: list[dict[str, Any]]
    questions: list[dict[str, Any]] = field(default_factory=list)

    def speakers(self) -> list[str]:
        """Its speakers in order of first appearance."""
        return list(dict.fromkeys(t["speaker"] for t in self.turns))

    def sessions(self) -> list[list[dict[str, Any]]]:
        """Its turns grouped by session, sessions in order, turns in file order."""
        grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for turn in self.turns:
            grouped[int(turn["session"])].append(turn)
        return [grouped[n] for n in sorted(grouped)]


def load(data: Path, conversations: int | None, questions: int | None) -> list[Conversation]:
    """The conversations of `data` in file order, at most `conversations`, each with at most
    `questions` questions (its first ones)."""
    found: dict[str, Conversation] = {}
    for turn in locomo.read_jsonl(data / "memories.jsonl"):
        cid = turn["conversation_id"]
        found.setdefault(cid, Conversation(cid, [])).turns.append(turn)
    chosen = list(found.values())[:conversations]
    by_id = {c.id: c for c in chosen}
    for q in locomo.read_jsonl(data / "queries.jsonl"):
        conv = by_id.get(q["conversation_id"])
        if conv is not None and (questions is None or len(conv.questions) < questions):
            conv.questions.append(q)
    return chosen


def turn_text(turn: dict[str, Any], names: bool, caption: bool) -> str:
    """A turn as written in the transcript: "<Speaker>: <text> [shares <caption>]"."""
    return locomo.render(turn, "speaker" if names else "plain", caption)


def session_messages(
    turns: Sequence[dict[str, Any]], user: str, *, names: bool = True, caption: bool = True
) -> list[Message]:
    """A session's turns as messages: `user`'s in the user role, the other speaker's in the
    assistant role, consecutive turns of one speaker merged (one per line)."""
    messages: list[Message] = []
    for turn in turns:
        role = "user" if turn["speaker"] == user else "assistant"
        text = turn_text(turn, names, caption)
        if messages and messages[-1].role == role:
            last = messages[-1]
            messages[-1] = Message(role, f"{last.text}\n{text}", (*last.turn_ids, turn["id"]))
        else:
            messages.append(Message(role, text, (turn["id"],)))
    return messages


def iso_z(timestamp: str) -> str:
    """A LoCoMo session time (ISO, no zone) as Claude Code writes a line's: UTC, ms, "Z"."""
    when = datetime.fromisoformat(timestamp).replace(tzinfo=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def transcript_lines(
    messages: Sequence[Message], session_id: str, cwd: Path, timestamp: str
) -> list[str]:
    """The JSONL lines Claude Code would write for `messages` (tests/hook_transcript.py shape).

    Every line carries the session's date: LoCoMo gives one time per session.
    """
    lines: list[str] = []
    parent: str | None = None
    for n, message in enumerate(messages):
        line_id = str(uuid.uuid5(_IDS, f"{session_id}:{n}"))
        if message.role == "user":
            body: dict[str, Any] = {"role": "user", "content": message.text}
        else:
            body = {
                "id": "msg_" + line_id.replace("-", "")[:24],
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": message.text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": session_id,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": "main",
            "type": message.role,
            "message": body,
            "uuid": line_id,
            "timestamp": iso_z(timestamp),
        }
        if message.role == "assistant":
            record["requestId"] = "req_" + line_id.replace("-", "")[:24]
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        parent = line_id
    return lines


# --- scoring ---------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """`text` with every run of whitespace made one space."""
    return " ".join(text.split())


def shown_ids(context: str) -> list[int]:
    """The memory ids an injected context shows: every `#<digits>` token, in order, once."""
    return list(dict.fromkeys(int(m) for m in _SHOWN_ID.findall(context)))


@dataclass(frozen=True)
class TurnFinder:
    """Where a turn's words are found: a memory's content, or an injected context."""

    needle: str  # the normalised text that must appear whole
    runs: tuple[str, ...] = ()  # for a long turn: its whole RUN_WORDS-word runs
    words: int = 0

    @classmethod
    def of(cls, turn: dict[str, Any]) -> TurnFinder:
        """The finder for `turn` (see the module docstring for the rule)."""
        text = normalise(str(turn["text"]))
        words = text.split()
        if len(words) < SHORT_TURN_WORDS:
            return cls(f"{turn['speaker']}: {text}")
        runs: tuple[str, ...] = ()
        if len(words) >= CHUNKED_TURN_WORDS:
            runs = tuple(
                " ".join(words[i : i + RUN_WORDS]) for i in range(0, len(words), RUN_WORDS)
            )
        return cls(text, runs, len(words))

    def in_text(self, haystack: str) -> bool:
        """Whether normalised `haystack` holds the turn, whole or a good chunk of it."""
        if self.needle in haystack:
            return True
        if not self.runs:
            return False
        held = sum(len(run.split()) for run in self.runs if run in haystack)
        return held * 2 >= self.words


def turn_map(
    memories: Iterable[tuple[int, str]], turns: Sequence[dict[str, Any]]
) -> dict[int, list[str]]:
    """Memory id -> the ids of the turns its content holds (only memories holding one)."""
    finders = [(t["id"], TurnFinder.of(t)) for t in turns]
    out: dict[int, list[str]] = {}
    for memory_id, content in memories:
        text = normalise(content)
        held = [tid for tid, finder in finders if finder.in_text(text)]
        if held:
            out[memory_id] = held
    return out


def reached(
    context: str,
    relevant: Sequence[str],
    held_by: dict[int, list[str]],
    finders: dict[str, TurnFinder],
) -> set[str]:
    """The evidence turns that reached `context`: by a shown memory id, else by their text."""
    wanted = set(relevant)
    found = {tid for mid in shown_ids(context) for tid in held_by.get(mid, ()) if tid in wanted}
    text = normalise(context)
    found |= {tid for tid in wanted - found if tid in finders and finders[tid].in_text(text)}
    return found


def recall_at(relevant: Sequence[str], ranked: Sequence[str], k: int = 10) -> float:
    """score.py's Recall@k: the share of `relevant` in the first k distinct ranked ids."""
    top = list(dict.fromkeys(ranked))[:k]
    return len(set(relevant) & set(top)) / len(set(relevant))


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile bench.locomo reports (p95: share 0.95); 0 when empty."""
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[int(share * (len(ordered) - 1))]


@dataclass
class Asked:
    """One question as the prompt hook saw it, and what came back."""

    question: dict[str, Any]
    context: str = ""
    hook_ms: float = 0.0
    start_context: str = ""
    errors: list[str] = field(default_factory=list)
    reached: set[str] = field(default_factory=set)
    start_reached: set[str] = field(default_factory=set)
    search_r10: float | None = None
    direct_r10: float | None = None

    @property
    def category(self) -> str:
        """LoCoMo's category name."""
        return str(self.question.get("category_name") or self.question["category"])

    def to_json(self) -> dict[str, Any]:
        """A line of the kept details file."""
        return {
            "qid": self.question["qid"],
            "category": self.category,
            "relevant_ids": self.question["relevant_ids"],
            "reached": sorted(self.reached),
            "hook_ms": round(self.hook_ms, 1),
            "tokens": count_tokens(self.context),
            "context": self.context,
            "start_tokens": count_tokens(self.start_context),
            "start_context": self.start_context,
            "start_reached": sorted(self.start_reached),
            "search_r10": self.search_r10,
            "direct_r10": self.direct_r10,
            "errors": self.errors,
        }


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 4) if known else None


def figures(asked: Sequence[Asked]) -> dict[str, Any]:
    """The figures of one group of questions (a category, or all)."""
    tokens = [count_tokens(a.context) for a in asked]
    start = [count_tokens(a.start_context) for a in asked]
    latency = [a.hook_ms for a in asked]
    n = len(asked)
    return {
        "n": n,
        "injection_recall": round(sum(bool(a.reached) for a in asked) / n, 4) if n else 0.0,
        "evidence_recall": round(
            statistics.fmean(len(a.reached) / len(set(a.question["relevant_ids"])) for a in asked),
            4,
        )
        if n
        else 0.0,
        "injected_share": round(sum(bool(a.context) for a in asked) / n, 4) if n else 0.0,
        "tokens_median": statistics.median(tokens) if tokens else 0,
        "tokens_p95": percentile(tokens, 0.95),
        "hook_p50_ms": round(statistics.median(latency), 1) if latency else 0.0,
        "hook_p95_ms": round(percentile(latency, 0.95), 1),
        "search_r10": _mean([a.search_r10 for a in asked]),
        "search_r10_direct": _mean([a.direct_r10 for a in asked]),
        "start_recall": round(sum(bool(a.start_reached) for a in asked) / n, 4) if n else 0.0,
        # What the model of the question's session was shown at all: start or prompt context.
        "session_recall": round(sum(bool(a.reached | a.start_reached) for a in asked) / n, 4)
        if n
        else 0.0,
        "start_tokens_median": statistics.median(start) if start else 0,
    }


def report(asked: Sequence[Asked], extra: dict[str, Any]) -> dict[str, Any]:
    """The --json document: overall and per category figures, plus `extra` (run facts)."""
    by_category: dict[str, list[Asked]] = defaultdict(list)
    order: dict[str, int] = {}
    for a in asked:
        by_category[a.category].append(a)
        order.setdefault(a.category, int(a.question.get("category", 0)))
    return {
        "overall": figures(asked),
        "categories": {
            name: figures(by_category[name]) for name in sorted(by_category, key=order.__getitem__)
        },
        **extra,
    }


def table(result: dict[str, Any]) -> str:
    """The figures as a Markdown table."""

    def cell(value: Any, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    rows = [
        "| category | n | injection recall | tokens median | tokens p95 | hook p50 ms "
        "| hook p95 ms | search R@10 captured | R@10 direct |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups = [("overall", result["overall"]), *result["categories"].items()]
    for name, f in groups:
        rows.append(
            f"| {name} | {f['n']} | {cell(f['injection_recall'], 3)} "
            f"| {cell(f['tokens_median'], 0)} | {cell(f['tokens_p95'], 0)} "
            f"| {cell(f['hook_p50_ms'], 0)} | {cell(f['hook_p95_ms'], 0)} "
            f"| {cell(f['search_r10'], 4)} | {cell(f['search_r10_direct'], 4)} |"
        )
    return "\n".join(rows)


# --- the processes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HookRun:
    """One hook process: its wall time, the context it printed, what it said on stderr."""

    ms: float
    context: str
    stderr: str


@dataclass(frozen=True)
class Hooks:
    """Runs `memstrata hook EVENT` as Claude Code does: a process, the payload on stdin."""

    exe: Path
    env: dict[str, str]

    def run(
        self, event: str, payload: dict[str, Any], cwd: Path, env: dict[str, str] | None = None
    ) -> HookRun:
        """Run one hook and wait for it; the context is "" when it printed nothing."""
        tick = time.perf_counter()
        done = subprocess.run(
            [str(self.exe), "hook", event],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=cwd,
            check=False,
        )
        ms = (time.perf_counter() - tick) * 1000
        context = ""
        if done.stdout.strip():
            try:
                out = json.loads(done.stdout)
                context = str(out["hookSpecificOutput"]["additionalContext"])
            except (ValueError, KeyError, TypeError):
                return HookRun(ms, "", f"unreadable stdout: {done.stdout[:200]!r}")
        stderr = done.stderr.strip()
        if done.returncode:
            stderr = f"exit {done.returncode}: {stderr}"
        return HookRun(ms, context, stderr)


def payload(
    event: str, session_id: str, transcript: Path, cwd: Path, **extra: Any
) -> dict[str, Any]:
    """A hook's stdin as Claude Code sends it."""
    return {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": event,
        **extra,
    }


class Server:
    """A `memstrata serve` over stdio, started as Claude Code starts it and held open."""

    def __init__(self, exe: Path, env: dict[str, str], cwd: Path, log: Path) -> None:
        self._log = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(exe), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=cwd,
            text=True,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        # Reads stdout to its end, so a chatty server never blocks on a full pipe.
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def wait_ready(self, seconds: float, socket: Path | None) -> float:
        """Wait for the MCP initialize answer (and `socket`); returns the seconds it took."""
        tick = time.perf_counter()
        self._send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "claude-code", "version": CLAUDE_CODE_VERSION},
                },
            }
        )
        deadline = tick + seconds
        while True:
            left = deadline - time.perf_counter()
            if left <= 0 or self.process.poll() is not None:
                raise RuntimeError(f"memstrata serve did not answer; see {self._log.name}")
            try:
                answer = json.loads(self._lines.get(timeout=left))
            except queue.Empty:
                continue
            except ValueError:
                continue
            if answer.get("id") == 1:
                break
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        while socket is not None and not socket.exists():
            if time.perf_counter() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"no socket at {socket}; see {self._log.name}")
            time.sleep(0.1)
        return time.perf_counter() - tick

    def stop(self) -> None:
        """Close its stdin (Claude Code leaving), then end it if it does not exit."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@contextlib.contextmanager
def serving(
    exe: Path, env: dict[str, str], cwd: Path, log: Path, wait: float, socket: Path | None
) -> Iterator[float]:
    """A server up for the block; yields the seconds it took to answer."""
    server = Server(exe, env, cwd, log)
    try:
        yield server.wait_ready(wait, socket)
    finally:
        server.stop()


# --- the run ---------------------------------------------------------------------------------


@dataclass
class Layout:
    """Where a run keeps its files: the store, the projects, the transcripts."""

    root: Path

    @property
    def db(self) -> Path:
        """The one store of the run."""
        return self.root / "memory.db"

    def project_dir(self, conversation: str) -> Path:
        """The conversation's working directory: a git repository named after it."""
        return self.root / "projects" / conversation

    def project(self, conversation: str) -> str:
        """The project the hooks give the conversation's directory (scope git), by their rule."""
        from server.settings import Settings

        settings = Settings(db=self.db, project_scope="git")
        return settings.default_project(self.project_dir(conversation))

    def transcript(self, conversation: str, session_id: str) -> Path:
        """Where Claude Code would keep the session's transcript."""
        return self.root / "transcripts" / conversation / f"{session_id}.jsonl"


def hook_env(db: Path) -> dict[str, str]:
    """The hooks' and the server's environment: this one, the run's store, git scope."""
    return os.environ | {"MEMSTRATA_DB": str(db), "MEMSTRATA_PROJECT_SCOPE": "git"}


def _note(errors: list[str], event: str, run: HookRun) -> None:
    if run.stderr:
        errors.append(f"{event}: {run.stderr[:300]}")


def replay(conv: Conversation, layout: Layout, hooks: Hooks, args: argparse.Namespace) -> list[str]:
    """Replay every session of `conv` through the hooks; returns the hooks' complaints."""
    cwd = layout.project_dir(conv.id)
    cwd.mkdir(parents=True, exist_ok=True)
    if not (cwd / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(cwd)], check=True)
    speakers = conv.speakers()
    user = speakers[0] if args.user_speaker == "first" or len(speakers) < 2 else speakers[1]
    errors: list[str] = []
    # The two speakers' names as the authors of what each role said, as a person who set
    # MEMSTRATA_HOOKS__USER_NAME (and ASSISTANT_NAME) would have them: questions name them.
    other = next((name for name in speakers if name != user), "assistant")
    authors = (
        {"MEMSTRATA_HOOKS__USER_NAME": user, "MEMSTRATA_HOOKS__ASSISTANT_NAME": other}
        if args.authors
        else {}
    )
    for turns in conv.sessions():
        sid = str(uuid.uuid5(_IDS, f"{conv.id}:S{turns[0]['session']}"))
        path = layout.transcript(conv.id, sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        messages = session_messages(turns, user, names=args.names, caption=args.caption)
        lines = transcript_lines(messages, sid, cwd, turns[0]["timestamp"])
        path.write_text("", encoding="utf-8")
        run = hooks.run(
            "session-start", payload("SessionStart", sid, path, cwd, source="startup"), cwd
        )
        _note(errors, "session-start", run)
        if args.pre_compact:
            half = len(lines) // 2
            path.write_text("".join(lines[:half]), encoding="utf-8")
            extra = {"trigger": "auto", "custom_instructions": ""}
            compact = payload("PreCompact", sid, path, cwd, **extra)
            run = hooks.run("pre-compact", compact, cwd, authors)
            _note(errors, "pre-compact", run)
        path.write_text("".join(lines), encoding="utf-8")
        end = payload("SessionEnd", sid, path, cwd, reason="prompt_input_exit")
        _note(errors, "session-end", hooks.run("session-end", end, cwd, authors))
    return errors


def ask(conv: Conversation, layout: Layout, hooks: Hooks) -> list[Asked]:
    """Each question of `conv` as the first prompt of a fresh session of its project."""
    cwd = layout.project_dir(conv.id)
    out: list[Asked] = []
    for q in conv.questions:
        asked = Asked(q)
        sid = str(uuid.uuid4())
        # Claude Code names the transcript at start and writes it from the first message on.
        path = layout.transcript(conv.id, sid)
        start = hooks.run(
            "session-start", payload("SessionStart", sid, path, cwd, source="startup"), cwd
        )
        _note(asked.errors, "session-start", start)
        asked.start_context = start.context
        extra = {"prompt": q["question"], "permission_mode": "default"}
        prompt = hooks.run(
            "user-prompt-submit", payload("UserPromptSubmit", sid, path, cwd, **extra), cwd
        )
        _note(asked.errors, "user-prompt-submit", prompt)
        asked.context, asked.hook_ms = prompt.context, prompt.ms
        out.append(asked)
    return out


async def _contents(service: Any, project: str) -> list[tuple[int, str]]:
    """Every memory of `project` as (id, content), none marked as used."""
    from memory_core.domain.models import BrowseQuery

    rows: list[tuple[int, str]] = []
    before: int | None = None
    while True:
        page = await service.browse(BrowseQuery(project=project, before_id=before, limit=100))
        rows += [(m.id, m.content) for m in page]
        if len(page) < 100:
            return rows
        before = page[-1].id


async def captured(
    conversations: Sequence[Conversation],
    asked: dict[str, list[Asked]],
    layout: Layout,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Map memories to turns, score what was injected, and search the captured store."""
    from memory_core.domain.models import SearchMode
    from memory_core.services.memories import SearchRequest

    # A memory holding several turns (a session summary quoting them) stands for all of them.
    facts: dict[str, Any] = {
        "captured_memories": 0,
        "memories_holding_turns": 0,
        "memories_holding_several": 0,
    }
    # The frozen clock: neutral tiers and recency (module docstring).
    async with open_bench_store(layout.db, model=args.model) as store:
        service = store.memories
        maps: dict[str, dict[int, list[str]]] = {}
        for conv in conversations:
            project = layout.project(conv.id)
            rows = await _contents(service, project)
            if not rows:
                print(f"warning: nothing captured in project {project}", file=sys.stderr)
                facts.setdefault("empty_projects", []).append(project)
            held_by = maps[conv.id] = turn_map(rows, conv.turns)
            facts["captured_memories"] += len(rows)
            facts["memories_holding_turns"] += len(held_by)
            facts["memories_holding_several"] += sum(len(t) > 1 for t in held_by.values())
            finders = {t["id"]: TurnFinder.of(t) for t in conv.turns}
            for a in asked[conv.id]:
                relevant = a.question["relevant_ids"]
                a.reached = reached(a.context, relevant, held_by, finders)
                a.start_reached = reached(a.start_context, relevant, held_by, finders)
        if not args.search:
            return facts
        indexer = service.indexer
        if indexer is not None:
            # Rows the hooks wrote without vectors (no server): embedded as a server would.
            embedder = indexer.source.current()
            assert embedder is not None
            await indexer.backfill(embedder)
        mode = SearchMode.HYBRID if indexer is not None else SearchMode.KEYWORD
        for conv in conversations:
            project = layout.project(conv.id)
            for a in asked[conv.id]:
                q = a.question
                found = await service.search(
                    SearchRequest(
                        project=project,
                        query=q["question"],
                        queries=locomo.phrasings(q["question"], args.phrasings),
                        mode=mode,
                        limit=100,
                        mark_used=False,
                    )
                )
                ranked = [tid for h in found.hits for tid in maps[conv.id].get(h.memory.id, ())]
                a.search_r10 = recall_at(q["relevant_ids"], ranked)
    return facts


# --- bench.locomo's R@10 on a directly stored store ------------------------------------------


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def run_direct(conversations: Sequence[Conversation], work: Path, model: str) -> Path:
    """bench.locomo with its defaults on the same conversations and questions, in-process.

    Returns its results file (ranked turn ids per question). The selected data is written to
    a temporary directory for it and removed right after, so no copy of LoCoMo stays behind.
    """
    work.mkdir(parents=True, exist_ok=True)
    out = work / "locomo.jsonl"
    with tempfile.TemporaryDirectory(prefix="hook-replay-data-") as tmp:
        data = Path(tmp)
        _write_jsonl(data / "memories.jsonl", (t for c in conversations for t in c.turns))
        _write_jsonl(data / "queries.jsonl", (q for c in conversations for q in c.questions))
        argv = ["--data", str(data), "--out", str(out), "--db", str(work / "locomo.db")]
        with contextlib.redirect_stdout(sys.stderr):  # its table; ours is the one on stdout
            locomo.main([*argv, "--model", model])
    return out


def score_direct(asked: Iterable[Asked], results: Path) -> None:
    """Each question's R@10 in a results JSONL (missing: 0, as score.py counts it)."""
    ranked = {row["qid"]: row["ranked_ids"] for row in locomo.read_jsonl(results)}
    for a in asked:
        a.direct_r10 = recall_at(a.question["relevant_ids"], ranked.get(a.question["qid"], []))


def baseline_table(path: Path) -> dict[str, float]:
    """R@10 per category name ("overall", "temporal", ...) of a bench.locomo --json file
    (or of score.py's --json file)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    while isinstance(data, dict) and "metrics" in data:
        data = data["metrics"]
    if not isinstance(data, dict) or "overall" not in data:
        raise SystemExit(f"{path}: no metrics table (expected bench.locomo's --json output)")
    return {name.split(" ", 1)[-1]: float(row["R@10"]) for name, row in data.items()}


def apply_baseline(result: dict[str, Any], r10: dict[str, float]) -> None:
    """Put a baseline file's R@10 figures in place of the per-question ones."""
    result["overall"]["search_r10_direct"] = r10.get("overall")
    for name, figs in result["categories"].items():
        figs["search_r10_direct"] = r10.get(name)


# --- the command -----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """The command line (`--help`)."""
    p = argparse.ArgumentParser(
        prog="python -m bench.hook_replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Reads the data in place (CC BY-NC 4.0): never copy it into the repository.",
    )
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="split directory (%(default)s)")
    p.add_argument("--json", type=Path, help="write the figures as JSON here")
    p.add_argument("--conversations", type=int, help="only the first N conversations")
    p.add_argument("--questions", type=int, help="only the first N questions of each")
    p.add_argument(
        "--keep",
        type=Path,
        help="run in this new directory and keep it: the store (memory.db), the transcripts, "
        "the server's log and every question's context (questions.jsonl)",
    )
    p.add_argument(
        "--no-server",
        dest="server",
        action="store_false",
        help="no `memstrata serve` during the run (the prompt hook searches by keyword alone)",
    )
    p.add_argument(
        "--server-wait", type=float, default=120.0, help="seconds to wait for the server to answer"
    )
    p.add_argument(
        "--server-socket",
        type=Path,
        help="also wait until this path exists (the server's hook socket) before the first hook",
    )
    p.add_argument(
        "--pre-compact",
        action="store_true",
        help="run pre-compact when half of each session is written, before session-end",
    )
    p.add_argument(
        "--user-speaker",
        choices=["first", "second"],
        default="first",
        help="which of the two speakers is the user (the other is the assistant)",
    )
    for flag, text in (
        ("--names", 'write each turn as "<Speaker>: <text>"'),
        ("--caption", 'append a shared photo\'s caption, "[shares <caption>]"'),
        (
            "--authors",
            "capture with the speakers' names as the roles' authors "
            "(MEMSTRATA_HOOKS__USER_NAME / ASSISTANT_NAME)",
        ),
        ("--search", "also measure `search` R@10 over the captured store"),
    ):
        p.add_argument(flag, action=argparse.BooleanOptionalAction, default=True, help=text)
    p.add_argument(
        "--phrasings",
        choices=PHRASING_KINDS,
        default="none",
        help="rephrasings searched with each question (bench.locomo's; its default: none)",
    )
    p.add_argument(
        "--model",
        default="all-MiniLM-L6-v2-int8",
        help="embedding model of the in-process search and of bench.locomo ('none': keyword)",
    )
    p.add_argument(
        "--baseline",
        help="R@10 of the direct store: a bench.locomo results JSONL (scored on the same "
        "questions) or its --json file; default: run bench.locomo in-process; 'none': skip",
    )
    p.add_argument(
        "--memstrata",
        type=Path,
        default=Path(sys.executable).parent / "memstrata",
        help="the console script run for the hooks and the server (%(default)s)",
    )
    return p


def run_hooks(
    conversations: Sequence[Conversation],
    layout: Layout,
    hooks: Hooks,
    args: argparse.Namespace,
    extra: dict[str, Any],
) -> tuple[dict[str, list[Asked]], list[str]]:
    """The replay and the questions, with a server up unless --no-server."""
    errors: list[str] = []
    asked: dict[str, list[Asked]] = {}
    with contextlib.ExitStack() as stack:
        if args.server:
            up = stack.enter_context(
                serving(
                    hooks.exe,
                    hooks.env,
                    layout.root,
                    layout.root / "serve.log",
                    args.server_wait,
                    args.server_socket,
                )
            )
            extra["server_ready_s"] = round(up, 2)
        tick = time.perf_counter()
        for conv in conversations:
            print(f"replaying {conv.id}: {len(conv.sessions())} sessions", file=sys.stderr)
            errors += replay(conv, layout, hooks, args)
        extra["replay_s"] = round(time.perf_counter() - tick, 1)
        tick = time.perf_counter()
        for conv in conversations:
            print(f"asking {conv.id}: {len(conv.questions)} questions", file=sys.stderr)
            asked[conv.id] = ask(conv, layout, hooks)
            errors += [e for a in asked[conv.id] for e in a.errors]
        extra["ask_s"] = round(time.perf_counter() - tick, 1)
    return asked, errors


def baseline(
    conversations: Sequence[Conversation],
    everyone: Sequence[Asked],
    layout: Layout,
    args: argparse.Namespace,
    extra: dict[str, Any],
) -> dict[str, float] | None:
    """Score the direct store's R@10 per question, or return a baseline file's table."""
    if args.baseline is None:
        print("bench.locomo on the same conversations (direct store)", file=sys.stderr)
        score_direct(everyone, run_direct(conversations, layout.root / "direct", args.model))
        extra["baseline"] = "bench.locomo in-process, its defaults"
        return None
    if args.baseline == "none":
        return None
    path = Path(args.baseline)
    extra["baseline"] = str(path)
    if path.suffix == ".jsonl":
        score_direct(everyone, path)
        return None
    return baseline_table(path)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module docstring)."""
    args = parser().parse_args(argv)
    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if not args.memstrata.exists():
        raise SystemExit(f"{args.memstrata} is missing; install the project (make dev)")
    conversations = load(args.data, args.conversations, args.questions)
    if args.keep is not None:
        if args.keep.exists() and any(args.keep.iterdir()):
            raise SystemExit(f"{args.keep} is not empty; --keep needs a new directory")
        args.keep.mkdir(parents=True, exist_ok=True)
    layout = Layout((args.keep or Path(tempfile.mkdtemp(prefix="hook-replay-"))).resolve())
    hooks = Hooks(args.memstrata, hook_env(layout.db))
    extra: dict[str, Any] = {
        "server": args.server,
        "conversations": len(conversations),
        "sessions": sum(len(c.sessions()) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
    }
    try:
        asked, errors = run_hooks(conversations, layout, hooks, args, extra)
        everyone = [a for c in conversations for a in asked[c.id]]
        extra |= asyncio.run(captured(conversations, asked, layout, args))
        r10 = baseline(conversations, everyone, layout, args, extra)
        extra["hook_errors"] = len(errors)
        result = report(everyone, extra)
        if r10 is not None:
            apply_baseline(result, r10)
        if args.keep is not None:
            _write_jsonl(layout.root / "questions.jsonl", (a.to_json() for a in everyone))
    finally:
        if args.keep is None:
            shutil.rmtree(layout.root, ignore_errors=True)
    for line in errors[:5]:
        print(f"hook error: {line}", file=sys.stderr)
    print(table(result))
    print(json.dumps({k: v for k, v in result.items() if k not in ("overall", "categories")}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
