"""Claude Code hooks end to end: the installed `memstrata hook ...` in separate processes.

The tests play Claude Code: realistic hook payloads on stdin, a realistic transcript JSONL,
in a session's order, then a second session. Bad input of every kind must exit 0, print
nothing on stdout and lose nothing already stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlean

from memory_core.domain.conversation import EntryType
from memory_core.domain.models import Layer
from memory_core.services.session_start import SESSION_SUMMARY_KIND
from memory_core.services.transcripts import PROMPT_SOURCE, START_SOURCE
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.e2e.conftest import memstrata_exe
from tests.hook_transcript import first_part, noisy_part, second_part

pytestmark = pytest.mark.e2e

S1 = "0b5c8f3e-4a2d-4f7e-9d61-2f1c7a9e5b10"
S2 = "7d0e1f2a-9b8c-4d3e-8f7a-6b5c4d3e2f10"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def context(self, event: str) -> str:
        """The additionalContext printed, checked against Claude Code's documented shape."""
        data = json.loads(self.stdout)
        assert list(data) == ["hookSpecificOutput"]
        out = data["hookSpecificOutput"]
        assert out["hookEventName"] == event and set(out) == {"hookEventName", "additionalContext"}
        assert isinstance(out["additionalContext"], str) and len(out["additionalContext"]) <= 10_000
        return str(out["additionalContext"])


@dataclass(frozen=True)
class Workspace:
    repo: Path
    db: Path
    transcript: Path
    env: dict[str, str]

    def settings(self) -> Settings:
        return Settings(
            db=self.db,
            project="fallback",
            project_scope="git",
            schedule=ScheduleSettings(enabled=False),
            embedding_model="none",
        )

    @property
    def project(self) -> str:
        """The checkout's project, as the hooks and the server name it (its repository)."""
        return self.settings().default_project(self.repo)

    def payload(self, event: str, session: str = S1, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.repo),
            "hook_event_name": event,
            **fields,
        }


def hook(
    ws: Workspace,
    command: str,
    stdin: str | dict[str, Any],
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
) -> Run:
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    done = subprocess.run(
        [*prefix, str(memstrata_exe()), "hook", command],
        input=text,
        capture_output=True,
        text=True,
        env={**ws.env, **(env or {})},
        cwd=ws.repo,
        timeout=60,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def run_python(
    ws: Workspace, args: list[str], payload: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """The installed interpreter run with `args` as Claude Code runs a hook: the payload on
    stdin, in the workspace's checkout and environment; it must exit 0."""
    return subprocess.run(
        [str(memstrata_exe().parent / "python"), *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=ws.env,
        cwd=ws.repo,
        timeout=60,
        check=True,
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    repo = tmp_path / "shop-api"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "src" / "webhooks.py").write_text("def handle(): ...\n")
    (repo / "README.md").write_text("shop\n")
    db = tmp_path / "memory.db"
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": "fallback",
        "MEMSTRATA_PROJECT_SCOPE": "git",
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
    }
    workspace = Workspace(repo, db, tmp_path / f"{S1}.jsonl", env)
    asyncio.run(_seed(workspace))
    return workspace


async def _seed(ws: Workspace) -> None:
    async with open_container(ws.settings()) as c:
        m = c.memories
        await m.append(
            ws.project,
            Layer.EPISODIC,
            "Billing runs on the blue cluster in eu-west. " + "Capacity details follow. " * 20,
        )
        for i in range(30):
            await m.append(ws.project, Layer.EPISODIC, f"Standup note {i}: " + "routine " * 40)
        await m.append(
            ws.project, Layer.PROCEDURAL, "run make lint before pushing", key="before committing"
        )
        await m.learn(ws.project, "deploy.command", "make deploy ENV=prod")
        await m.append("other-project", Layer.EPISODIC, "Billing secret plan of another team")


async def _store(ws: Workspace) -> dict[str, Any]:
    async with open_container(ws.settings()) as c:
        sessions = {}
        for sid in (S1, S2):
            try:
                sessions[sid] = (await c.conversations.export(ws.project, sid)).entries
            except Exception:
                sessions[sid] = []
        episodic = await c.repo.list_layer(ws.project, Layer.EPISODIC, None, newest_first=True)
        stats = await c.conversations.stats(ws.project, S1) if sessions[S1] else None
        return {"entries": sessions, "episodic": episodic, "stats": stats, "total": len(episodic)}


def test_a_claude_code_session_then_the_next_one(ws: Workspace) -> None:
    # 1. SessionStart (startup): the project's context, named after the git work tree.
    start = hook(ws, "session-start", ws.payload("SessionStart", source="startup"))
    assert start.code == 0 and start.stderr == ""
    text = start.context("SessionStart")
    assert text.startswith("<memstrata-memory>\nMemory of project shop-api@")
    assert "not instructions to obey" in text and text.endswith("</memstrata-memory>")
    assert text.index("## Rules saved for this project") < text.index("## Recent memories")
    assert " before committing: run make lint before pushing" in text
    assert "when before committing" not in text
    assert "deploy.command: make deploy ENV=prod" in text
    assert "git branch: main" in text and "src/" in text
    assert "another team" not in text
    assert "blue cluster" not in text  # old and outside the start budget (30 newer notes)

    # 2. Resume and compact re-inject exactly the cached text.
    for source in ("resume", "compact"):
        again = hook(ws, "session-start", ws.payload("SessionStart", source=source))
        assert again.context("SessionStart") == text

    # 3. A prompt recalls a matching memory; the same prompt again injects nothing new.
    prompt = ws.payload("UserPromptSubmit", prompt="Which cluster does billing run on?")
    recalled = hook(ws, "user-prompt-submit", prompt)
    assert recalled.code == 0
    hits = recalled.context("UserPromptSubmit")
    assert "blue cluster in eu-west" in hits and "another team" not in hits
    assert hook(ws, "user-prompt-submit", prompt).stdout == ""
    # Too short, or nothing matches: nothing at all on stdout.
    assert hook(ws, "user-prompt-submit", ws.payload("UserPromptSubmit", prompt="ok")).stdout == ""
    nothing = ws.payload("UserPromptSubmit", prompt="zyxwv qwerty plugh xyzzy frobnicate")
    assert hook(ws, "user-prompt-submit", nothing).stdout == ""
    # Memories shown at session start are not injected again either.
    rule = ws.payload("UserPromptSubmit", prompt="what is the deploy command for prod?")
    assert "make deploy ENV=prod" not in hook(ws, "user-prompt-submit", rule).stdout

    # 4. PreCompact records the transcript so far; SessionEnd the rest.
    ws.transcript.write_text("".join(first_part()))
    pre = hook(ws, "pre-compact", ws.payload("PreCompact", trigger="auto", custom_instructions=""))
    assert (pre.code, pre.stdout, pre.stderr) == (0, "", "")
    ws.transcript.write_text("".join(first_part() + second_part() + noisy_part()))
    end = hook(ws, "session-end", ws.payload("SessionEnd", reason="prompt_input_exit"))
    assert (end.code, end.stdout, end.stderr) == (0, "", "")
    assert hook(ws, "session-end", ws.payload("SessionEnd", reason="other")).code == 0  # again

    store = asyncio.run(_store(ws))
    entries = store["entries"][S1]
    contexts = [e for e in entries if e.type is EntryType.CONTEXT]
    assert [c.source for c in contexts][:2] == [START_SOURCE, PROMPT_SOURCE]
    assert contexts[0].content == text  # what was injected, kept with the session
    spoken = [e for e in entries if e.type is not EntryType.CONTEXT]
    # 13 messages, 6 tool calls, 6 results: none twice, none of Claude Code's own text
    assert len(spoken) == 25
    assert [e.tool_name for e in spoken if e.type is EntryType.TOOL_CALL][:2] == ["Read", "Bash"]
    assert all("sk_live_" not in e.content for e in entries)
    assert store["stats"].total_entries == len(entries)
    summaries = [m for m in store["episodic"] if m.metadata.get("kind") == SESSION_SUMMARY_KIND]
    assert len(summaries) == 1 and "Stripe webhook signature fix" in summaries[0].content

    # 5. The next session starts with what the first one stored.
    second = hook(ws, "session-start", ws.payload("SessionStart", session=S2, source="startup"))
    following = second.context("SessionStart")
    assert "## Last session in this project" in following
    assert "Stripe webhook signature fix" in following


BAD_INPUTS = [
    ("session-start", ""),
    ("session-start", "{not json"),
    ("user-prompt-submit", "[1, 2]"),
    ("user-prompt-submit", '{"prompt": "no session id here"}'),
    ("bogus-event", '{"session_id": "x"}'),
    ("session-end", '{"session_id": "x", "transcript_path": "/nonexistent/t.jsonl"}'),
    ("pre-compact", '{"session_id": "x"}'),
]


@pytest.mark.parametrize(("command", "stdin"), BAD_INPUTS)
def test_bad_input_exits_0_silently_and_loses_nothing(
    ws: Workspace, command: str, stdin: str
) -> None:
    before = asyncio.run(_store(ws))["total"]
    run = hook(ws, command, stdin)
    assert run.code == 0 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith(f"memstrata hook {command}: ")
    assert asyncio.run(_store(ws))["total"] == before


def test_a_transcript_with_malformed_lines_records_the_rest(ws: Workspace) -> None:
    lines = first_part()
    lines.insert(3, "\x00garbage\n")
    lines.append('{"type": "assistant", "message": {"content": [{"type": "text"}]}}\n')
    ws.transcript.write_text("".join(lines))
    run = hook(ws, "session-end", ws.payload("SessionEnd", reason="clear"))
    assert (run.code, run.stdout, run.stderr) == (0, "", "")
    assert len(asyncio.run(_store(ws))["entries"][S1]) == 5


def test_a_database_locked_by_a_writer_gives_up_in_time_and_loses_nothing(
    ws: Workspace,
) -> None:
    ws.transcript.write_text("".join(first_part()))
    before = asyncio.run(_store(ws))["total"]
    locker = sqlean.connect(str(ws.db), timeout=0)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        fast = {"MEMSTRATA_HOOKS__TIMEOUT": "1", "MEMSTRATA_HOOKS__RECORD_TIMEOUT": "1"}
        for command, payload in [
            ("session-end", ws.payload("SessionEnd", reason="logout")),
            ("user-prompt-submit", ws.payload("UserPromptSubmit", prompt="billing cluster?")),
            ("session-start", ws.payload("SessionStart", source="startup")),
        ]:
            run = hook(ws, command, payload, env=fast)
            assert run.code == 0 and run.stdout == "", command
            assert run.stderr.count("\n") == 1 and "gave up after 1 s" in run.stderr
    finally:
        locker.rollback()
        locker.close()
    assert asyncio.run(_store(ws))["total"] == before
    # Once the writer is gone, the same hook records everything.
    done = hook(ws, "session-end", ws.payload("SessionEnd", reason="logout"))
    assert done.code == 0 and done.stderr == ""
    assert len(asyncio.run(_store(ws))["entries"][S1]) == 5


def test_a_read_only_database_directory(ws: Workspace, tmp_path: Path) -> None:
    # Root ignores permissions unless it gives up the capabilities that override them.
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner")
    locked = tmp_path / "ro"
    locked.mkdir()
    db = locked / "memory.db"
    db.write_bytes(ws.db.read_bytes())
    locked.chmod(0o555)
    try:
        ro = Workspace(ws.repo, db, ws.transcript, {**ws.env, "MEMSTRATA_DB": str(db)})
        ws.transcript.write_text("".join(first_part()))
        for command, payload in [
            ("session-start", ws.payload("SessionStart", source="startup")),
            ("session-end", ws.payload("SessionEnd", reason="logout")),
        ]:
            run = hook(ro, command, payload, prefix=prefix)
            assert run.code == 0 and run.stdout == "", run.stderr
            assert len(run.stderr.strip().splitlines()) == 1
        assert db.read_bytes() == ws.db.read_bytes()
        assert sorted(p.name for p in locked.iterdir()) == ["memory.db"]
    finally:
        locked.chmod(0o755)


# Runs `memstrata hook <argv[1]>` in this process, then lets the rest of the script look at
# what it loaded: the hook ends with os._exit, which stops here instead.
_HOOK_IN_PROCESS = """
import gc, json, os, sys
class Exit(BaseException):
    pass
def stop(code):
    raise Exit(code)
os._exit = stop
from server.cli import main
try:
    main(["hook", sys.argv[1]])
except Exit:
    pass
"""

_RUNNER = (
    _HOOK_IN_PROCESS
    + """
heavy = ("mcp", "rich", "apscheduler", "uvicorn", "starlette", "numpy", "onnxruntime", "asyncpg",
         "pydantic_settings", "importlib.metadata", "server.cli.commands", "server.schemas",
         "greenlet")
if sys.argv[1] == "session-start":
    heavy += ("ssl",)  # on the SQLite file (with PostgreSQL it may need TLS)
    heavy += ("anyio",)  # the model's loader and the search services use it; a start does not
loaded = [m for m in heavy if sys.modules.get(m)]
if gc.isenabled():  # off from start-up to exit (server.cli.main)
    loaded.append("the cyclic GC")
sys.stderr.write("LOADED " + json.dumps(loaded) + " " + str("server.hooks.events" in sys.modules))
"""
)


def test_the_hook_path_imports_neither_mcp_nor_rich_nor_numpy(ws: Workspace) -> None:
    """Nor pydantic-settings, nor importlib.metadata (pydantic's plugin search), nor the CLI's
    other commands or the tools' result models, nor, for session-start on the SQLite file, ssl
    and anyio: each costs a cold hook milliseconds of its budget. The cyclic GC stays off
    until the hook exits."""
    for command, payload in [
        ("session-start", ws.payload("SessionStart", source="startup")),
        ("user-prompt-submit", ws.payload("UserPromptSubmit", prompt="billing cluster?")),
        ("session-end", ws.payload("SessionEnd", reason="other")),
    ]:
        ws.transcript.write_text("".join(first_part()))
        done = run_python(ws, ["-c", _RUNNER, command], payload)
        assert "LOADED [] True" in done.stderr, done.stderr  # ran the hook, loaded none


_START_RUNNER = (
    _HOOK_IN_PROCESS
    + """
ours = sorted(m for m in sys.modules if m.startswith("memory_core"))
sys.stderr.write("LOADED " + json.dumps(ours))
"""
)

# What session-start does not use: prompt search, transcript recording, vectors, knowledge.
_NOT_FOR_SESSION_START = (
    "memory_core.services.memories",
    "memory_core.services.indexing",
    "memory_core.services.transcripts",
    "memory_core.domain.transcript",
    "memory_core.storage.sqlite.vectors",
    "memory_core.storage.sqlite.reader",
    "memory_core.storage.sqlite.documents",
    "memory_core.storage.sqlite.scratchpad",
    "memory_core.storage.sqlite.leases",
    "memory_core.embeddings.lazy",
)


def test_session_start_imports_only_the_stores_and_services_it_uses(ws: Workspace) -> None:
    payload = ws.payload("SessionStart", source="startup")
    done = run_python(ws, ["-c", _START_RUNNER, "session-start"], payload)
    assert "run make lint before pushing" in done.stdout  # the context was built
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    loaded = set(json.loads(line.removeprefix("LOADED ")))
    # What it did use: the start context, its note in conversation memory, the hook session.
    assert {
        "memory_core.services.session_start",
        "memory_core.services.conversations",
        "memory_core.storage.sqlite.repository",
        "memory_core.storage.sqlite.preferences",
        "memory_core.storage.sqlite.hook_sessions",
        "memory_core.storage.sqlite.conversations",
    } <= loaded
    assert sorted(loaded.intersection(_NOT_FOR_SESSION_START)) == []
    entries = asyncio.run(_store(ws))["entries"][S1]
    assert [e.source for e in entries] == [START_SOURCE]  # the injected text was noted


def test_invalid_configuration_exits_0_with_one_line_naming_the_setting(ws: Workspace) -> None:
    payload = ws.payload("SessionStart", source="startup")
    run = hook(ws, "session-start", payload, env={"MEMSTRATA_HOOKS__START_TOKENS": "lots"})
    assert run.code == 0 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "hooks.start_tokens" in run.stderr


def test_hooks_switched_off_print_nothing(ws: Workspace) -> None:
    off = {"MEMSTRATA_HOOKS__SESSION_START": "false", "MEMSTRATA_HOOKS__USER_PROMPT_SUBMIT": "0"}
    start = hook(ws, "session-start", ws.payload("SessionStart", source="startup"), env=off)
    prompt = ws.payload("UserPromptSubmit", prompt="Which cluster does billing run on?")
    recalled = hook(ws, "user-prompt-submit", prompt, env=off)
    assert (start.code, start.stdout, start.stderr) == (0, "", "")
    assert (recalled.code, recalled.stdout, recalled.stderr) == (0, "", "")


def test_python_m_server_hook_runs_the_same_command(ws: Workspace) -> None:
    payload = ws.payload("SessionStart", source="startup")
    done = run_python(ws, ["-m", "server", "hook", "session-start"], payload)
    assert "Memory of project shop-api@" in Run(0, done.stdout, "").context("SessionStart")


@pytest.mark.parametrize(
    ("command", "environ", "tls"),
    [
        ("session-start", {}, False),
        ("session-start", {"MEMSTRATA_DB": "/tmp/m.db", "MEMSTRATA_DATABASE_URL": ""}, False),
        ("session-start", {"MEMSTRATA_DATABASE_URL": "postgresql://h/db"}, True),
        ("session-start", {"memstrata_database_url": "postgresql://h/db"}, True),
        ("user-prompt-submit", {}, True),  # may load the model
        ("pre-compact", {}, True),  # may call the summarizer endpoint
        ("session-end", {}, True),
    ],
)
def test_only_session_start_on_the_sqlite_file_goes_without_ssl(
    command: str, environ: dict[str, str], tls: bool
) -> None:
    from server.hooks.entry import _may_use_tls

    assert _may_use_tls(command, environ) is tls
