"""The prompt hook with a warm `memstrata serve`: real processes, as Claude Code runs them.

Claude Code starts `memstrata serve` (stdio, its stdin kept open) for the session and runs
`memstrata hook user-prompt-submit` on every prompt. The server listens on a per-user socket
(server.hooks.listener); the hook asks it first (server.hooks.warm) and falls back to its own
keyword search when nobody answers. Which path answered is read from the hook process itself:
the warm path never imports pydantic.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from memory_core.domain.models import Layer
from server.container import open_container
from server.hooks.warm import socket_dir, socket_name, store_identity
from server.settings import ScheduleSettings, Settings
from tests.e2e.conftest import free_port, memstrata_exe
from tests.e2e.test_hooks import _HOOK_IN_PROCESS
from tests.hook_transcript import SESSION, first_part, second_part
from tests.runtime_dir import short_runtime_dir

pytestmark = pytest.mark.e2e

WEBHOOKS = "We moved the payment webhooks from Flask to FastAPI in October."
PARAPHRASE = "which web framework do our payment callbacks run on now?"
BILLING = "Billing runs on the blue cluster in eu-west."
PROMPT = "Which cluster does billing run on?"
LONG_WAIT = 90.0  # seconds: only a cap against hanging on a broken server, never a target

# The hook in this interpreter; then says which path answered: the warm one loads none of
# the direct path's modules (it only asks the server), the direct one all of them.
_WHICH_PATH = (
    _HOOK_IN_PROCESS
    + """
direct = [m for m in ("pydantic", "structlog", "asyncio", "server.settings") if m in sys.modules]
path = "warm" if not direct else "direct" if len(direct) == 4 else f"mixed {direct}"
sys.stderr.write("PATH " + path + "\\n")
"""
)


@pytest.fixture
def runtime() -> Iterator[Path]:
    with short_runtime_dir() as path:
        yield path


@dataclass
class Workspace:
    repo: Path
    runtime: Path
    env: dict[str, str]
    servers: list[Server] = field(default_factory=list)

    def settings(self) -> Settings:
        url = self.env.get("MEMSTRATA_DATABASE_URL")
        db = Path(self.env.get("MEMSTRATA_DB", "unused.db"))
        return Settings(
            db=db,
            database_url=url,
            project="fallback",
            project_scope="git",
            schedule=ScheduleSettings(enabled=False),
            embedding_model="none",
        )

    @property
    def socket(self) -> Path:
        settings = self.settings()
        identity = store_identity(settings.database_url, settings.db)
        assert identity is not None
        return socket_dir(self.env) / socket_name(identity)

    def serve(self, *args: str, **env: str) -> Server:
        server = Server.start(self, env, args)
        self.servers.append(server)
        return server

    def run(
        self, argv: list[str], payload: dict[str, str], env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        """A hook command as Claude Code runs it: the payload on stdin, in the checkout."""
        return subprocess.run(
            argv,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env={**self.env, **env},
            cwd=self.repo,
            timeout=LONG_WAIT,
            check=True,
        )

    def hook(self, prompt: str, session: str, **env: str) -> tuple[str, str | None]:
        """(which path answered, the injected context or None) of one prompt hook."""
        payload = {
            "session_id": session,
            "transcript_path": str(self.repo / "t.jsonl"),
            "cwd": str(self.repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        python = str(memstrata_exe().parent / "python")
        done = self.run([python, "-c", _WHICH_PATH, "user-prompt-submit"], payload, env)
        path = next(x for x in done.stderr.splitlines() if x.startswith("PATH ")).split(" ", 1)[1]
        if not done.stdout:
            return path, None
        out = json.loads(done.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "UserPromptSubmit"
        return path, str(out["additionalContext"])


@dataclass
class Server:
    """`memstrata serve` over stdio, its stdin held open as Claude Code holds it."""

    proc: subprocess.Popen[bytes]
    log: Path
    _stdin: IO[bytes]

    @classmethod
    def start(cls, ws: Workspace, env: dict[str, str], args: tuple[str, ...] = ()) -> Server:
        log = ws.runtime.parent / f"{ws.runtime.name}-serve-{len(ws.servers)}.log"
        with log.open("wb") as errors:
            proc = subprocess.Popen(
                [str(memstrata_exe()), "serve", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env={**ws.env, "MEMSTRATA_LOG_LEVEL": "INFO", **env},
                cwd=ws.repo,
            )
        assert proc.stdin is not None
        return cls(proc, log, proc.stdin)

    def events(self) -> list[str]:
        names = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                names.append(json.loads(line).get("event", ""))
            except ValueError:
                continue
        return names

    def wait_for(self, event: str) -> None:
        """Until the server has logged `event` (fails if it exits first)."""
        self.wait_for_count(event, 1)

    def wait_for_count(self, event: str, count: int) -> None:
        """Until the server has logged `event` `count` times (fails if it exits first)."""
        stop = time.monotonic() + LONG_WAIT
        while self.events().count(event) < count:
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < stop, f"no {event} in {self.log.read_text()}"
            time.sleep(0.05)

    def close(self) -> None:
        """End it as Claude Code does at the session's end: close its stdin."""
        self._stdin.close()
        self.proc.wait(timeout=LONG_WAIT)

    def kill(self) -> None:
        """End it as a crash would: no shutdown at all."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=LONG_WAIT)
        self._stdin.close()


def _workspace(tmp_path: Path, runtime: Path, store: dict[str, str]) -> Iterator[Workspace]:
    repo = tmp_path / "shop-api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    env = {
        **store,
        "MEMSTRATA_PROJECT": "fallback",
        "MEMSTRATA_PROJECT_SCOPE": "git",
        "MEMSTRATA_EMBEDDING_MODEL": "none",
        "MEMSTRATA_SCHEDULE__ENABLED": "false",
        "XDG_RUNTIME_DIR": str(runtime),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
    }
    ws = Workspace(repo, runtime, env)
    asyncio.run(_seed(ws))
    try:
        yield ws
    finally:
        for server in ws.servers:
            if server.proc.poll() is None:
                server.kill()
            server._stdin.close()


async def _seed(ws: Workspace) -> None:
    settings = ws.settings()
    project = settings.default_project(ws.repo)  # the checkout's, as the hooks name it
    async with open_container(settings) as c:
        await c.memories.append(project, Layer.EPISODIC, WEBHOOKS)
        await c.memories.append(project, Layer.EPISODIC, BILLING)
        await c.memories.append("other-project", Layer.EPISODIC, "Billing of another team.")


@pytest.fixture
def ws(tmp_path: Path, runtime: Path) -> Iterator[Workspace]:
    """A git checkout `shop-api` and its memories in a SQLite file, keyword-only."""
    yield from _workspace(tmp_path, runtime, {"MEMSTRATA_DB": str(tmp_path / "memory.db")})


@pytest.fixture(params=["sqlite", "postgres"])
def any_ws(request: pytest.FixtureRequest, tmp_path: Path, runtime: Path) -> Iterator[Workspace]:
    if request.param == "sqlite":
        store = {"MEMSTRATA_DB": str(tmp_path / "memory.db")}
    else:
        store = {"MEMSTRATA_DATABASE_URL": request.getfixturevalue("pg_url")}
    yield from _workspace(tmp_path, runtime, store)


def test_a_paraphrase_is_recalled_by_meaning_with_a_warm_server(ws: Workspace) -> None:
    """The memories were stored without vectors (no model); the server embeds them at its
    start (the backfill) and answers the prompt hook with hybrid search, as Claude Code's
    own server for the session would."""
    server = ws.serve(MEMSTRATA_EMBEDDING_MODEL="all-MiniLM-L6-v2-int8")
    server.wait_for("hooks.listening")
    server.wait_for("vectors.backfilled")
    env = {"MEMSTRATA_EMBEDDING_MODEL": "all-MiniLM-L6-v2-int8", "MEMSTRATA_HOOKS__WARM_WAIT": "10"}
    path, context = ws.hook(PARAPHRASE, "s1", **env)
    assert path == "warm"
    assert context is not None and WEBHOOKS in context
    assert "another team" not in context

    # The session ends: its hook stores what was said without vectors (it loads no model)
    # and asks the warm server to embed them, which it does in the background.
    transcript = ws.repo / "t.jsonl"
    transcript.write_text("".join(first_part() + second_part()))
    end = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(ws.repo),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    done = ws.run([str(memstrata_exe()), "hook", "session-end"], end, env)
    assert (done.stdout, done.stderr) == ("", "")
    server.wait_for_count("vectors.backfilled", 2)


def test_the_hook_falls_back_when_the_server_dies_and_a_new_one_takes_over(
    any_ws: Workspace,
) -> None:
    ws = any_ws
    first = ws.serve()
    first.wait_for("hooks.listening")
    path, context = ws.hook(PROMPT, "s1")
    assert path == "warm" and context is not None and BILLING in context

    first.kill()  # no shutdown: its socket file stays behind, nobody answers it
    assert ws.socket.exists()
    path, context = ws.hook(PROMPT, "s2")
    assert path == "direct" and context is not None and BILLING in context

    second = ws.serve()  # the next session's server: the lock is free, the stale file goes
    second.wait_for("hooks.listening")
    path, context = ws.hook(PROMPT, "s3")
    assert path == "warm" and context is not None and BILLING in context
    second.close()
    assert not ws.socket.exists()  # unlinked at a clean shutdown
    path, context = ws.hook(PROMPT, "s4")
    assert path == "direct" and context is not None and BILLING in context


def test_two_sessions_servers_one_listener_and_the_second_takes_over(ws: Workspace) -> None:
    first = ws.serve()
    first.wait_for("hooks.listening")
    second = ws.serve()
    second.wait_for("server.starting")
    path, context = ws.hook(PROMPT, "s1")
    assert path == "warm" and context is not None and BILLING in context
    assert "hooks.listening" not in second.events()

    first.close()  # the first session ends; the second's server retries within ~30 s
    second.wait_for("hooks.listening")
    path, context = ws.hook(PROMPT, "s2")
    assert path == "warm" and context is not None and BILLING in context


def test_an_http_server_answers_too(ws: Workspace) -> None:
    server = ws.serve("--http", "--port", str(free_port()))
    server.wait_for("hooks.listening")
    path, context = ws.hook(PROMPT, "s1")
    assert path == "warm" and context is not None and BILLING in context
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=LONG_WAIT)
    assert not ws.socket.exists()


def test_a_stale_socket_without_a_server_falls_back(ws: Workspace) -> None:
    import socket

    ws.socket.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(ws.socket))
    dead.close()
    path, context = ws.hook(PROMPT, "s1")
    assert path == "direct" and context is not None and BILLING in context


def test_warm_off_always_takes_the_direct_path(ws: Workspace) -> None:
    server = ws.serve()
    server.wait_for("hooks.listening")
    path, context = ws.hook(PROMPT, "s1", MEMSTRATA_HOOKS__WARM="false")
    assert path == "direct" and context is not None and BILLING in context
