"""The warm hook listener (server.hooks.listener) and its lean client (server.hooks.warm).

In-process: the listener serves a container opened on a temporary store (both backends), the
client runs in a worker thread as the hook process would. The real `memstrata serve` and
`memstrata hook` processes are in tests/e2e/test_warm_hooks.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memory_core.domain.models import Layer
from server.container import Container, open_container
from server.hooks.listener import OPS, HookListener, ListenerParts, peer_allowed, serve_hooks
from server.hooks.warm import (
    WarmUnavailable,
    ask,
    private_dir,
    socket_dir,
    socket_name,
    store_identity,
    warm_enabled,
    warm_wait,
)
from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import ready_fake
from tests.runtime_dir import short_runtime_dir

PROJECT = "shop-api"
BILLING = "Billing runs on the blue cluster in eu-west."
PROMPT = "Which cluster does billing run on?"


@pytest.fixture
def runtime() -> Iterator[Path]:
    with short_runtime_dir() as path:
        yield path


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


def hook_env(settings: Settings, runtime: Path, **extra: str) -> dict[str, str]:
    """What a hook process of this store would have in its environment."""
    env = {"XDG_RUNTIME_DIR": str(runtime), "MEMSTRATA_PROJECT": PROJECT, **extra}
    if settings.database_url:
        env["MEMSTRATA_DATABASE_URL"] = settings.database_url
    else:
        env["MEMSTRATA_DB"] = str(settings.db)
    return env


def prompt_payload(prompt: str = PROMPT, session: str = "s1") -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": "/",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def serving(
    container: Container,
    runtime: Path,
    on_listening: Callable[[HookListener], None],
    *,
    retry: float,
) -> asyncio.Task[None]:
    """serve_hooks on the container in a task, its socket under `runtime`."""
    return asyncio.create_task(
        serve_hooks(
            ListenerParts.of(container),
            environ={"XDG_RUNTIME_DIR": str(runtime)},
            retry_seconds=retry,
            on_listening=on_listening,
        )
    )


@asynccontextmanager
async def listening(
    container: Container, runtime: Path, *, retry: float = 30.0
) -> AsyncIterator[HookListener]:
    """serve_hooks on the container, until the block ends; yields once it listens."""
    started: asyncio.Future[HookListener] = asyncio.get_running_loop().create_future()
    task = serving(container, runtime, started.set_result, retry=retry)
    try:
        yield await asyncio.wait_for(asyncio.shield(started), 30)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def ask_async(op: str, env: dict[str, str], payload: Any = None) -> dict[str, Any]:
    # Blocking, like the hook process: run it off the loop that serves it.
    return await asyncio.to_thread(ask, op, env, payload, wait=30)


def exchange(path: Path, data: bytes) -> bytes:
    """Send raw bytes to the socket; everything the listener answers before closing.

    A listener that stops reading (a request over its limit) may close while we still send,
    and the reset may discard its answer: then b"" comes back.
    """
    chunks = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    return b"".join(chunks)


async def test_a_prompt_is_answered_by_the_warm_server(
    store_settings: Settings, runtime: Path
) -> None:
    async with open_container(store_settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        await c.memories.append("other-project", Layer.EPISODIC, "Billing runs elsewhere.")
        async with listening(c, runtime) as listener:
            # The hook's MEMSTRATA_PROJECT, not the server's ("test"), picks the project.
            env = hook_env(store_settings, runtime)
            answer = await ask_async("user-prompt-submit", env, prompt_payload())
            assert answer["ok"] is True
            assert BILLING in answer["context"] and "elsewhere" not in answer["context"]
            # The session's state is the store's: the same memory is not injected twice.
            again = await ask_async("user-prompt-submit", env, prompt_payload())
            assert again == {"ok": True, "context": None}
            # Private: the directory 0700, the socket 0600, named by the store.
            assert listener.path.parent == runtime / "memstrata"
            assert listener.path.name == socket_name(str(listener.parts.identity))
            assert (runtime / "memstrata").stat().st_mode & 0o777 == 0o700
            assert listener.path.stat().st_mode & 0o777 == 0o600
        assert not listener.path.exists()  # unlinked at shutdown


async def test_the_hook_settings_come_from_the_hook_not_the_server(
    settings: Settings, runtime: Path
) -> None:
    async with open_container(settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        async with listening(c, runtime):
            env = hook_env(settings, runtime, MEMSTRATA_HOOKS__USER_PROMPT_SUBMIT="false")
            off = await ask_async("user-prompt-submit", env, prompt_payload())
            assert off == {"ok": True, "context": None}
            # An invalid value is an error answer naming the variable (the hook then runs its
            # own path, which reports it).
            bad = hook_env(settings, runtime, MEMSTRATA_HOOKS__PROMPT_TOKENS="lots")
            with pytest.raises(WarmUnavailable, match="MEMSTRATA_HOOKS__PROMPT_TOKENS"):
                await ask_async("user-prompt-submit", bad, prompt_payload())


async def test_requests_the_listener_refuses(settings: Settings, runtime: Path) -> None:
    async with open_container(settings) as c, listening(c, runtime) as listener:
        identity = listener.parts.identity

        def answer(request: Any) -> dict[str, Any]:
            raw = request if isinstance(request, bytes) else json.dumps(request).encode() + b"\n"
            return dict(json.loads(exchange(listener.path, raw)))

        good = {"v": 1, "op": "index", "store": identity, "env": {}}
        assert (await asyncio.to_thread(answer, good))["ok"] is True
        refused = [
            ({**good, "store": "sqlite:/elsewhere.db"}, "another store"),
            ({**good, "v": 2}, "v=1"),
            ({**good, "op": "session-start"}, "unknown op"),
            ({**good, "env": {"MEMSTRATA_DB": 3}}, "env must be"),
            (b"not json\n", "not a JSON line"),
            (b"[1]\n", "v=1"),
        ]
        for request, error in refused:
            got = await asyncio.to_thread(answer, request)
            assert got["ok"] is False and error in got["error"], (error, got)
        # Over the limit: an error answer, or closed before the rest was sent.
        big = b'{"v": 1, "pad": "' + b"x" * 1_100_000 + b'"}\n'
        got_big = await asyncio.to_thread(exchange, listener.path, big)
        assert got_big == b"" or b"larger than" in got_big
        # A payload the hook could not have sent: an error answer, the hook goes direct.
        bad = {**good, "op": "user-prompt-submit", "payload": {"prompt": "no session"}}
        got = await asyncio.to_thread(answer, bad)
        assert got["ok"] is False and "session_id" in got["error"]


async def test_work_past_the_hooks_wait_is_cancelled(
    settings: Settings, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook has gone its own way by then; a late write would hide memories from it."""
    finished: list[bool] = []

    async def slow(parts: ListenerParts, request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(1.0)
        finished.append(True)
        return {"ok": True}

    monkeypatch.setitem(OPS, "slow", slow)
    async with open_container(settings) as c, listening(c, runtime):
        env = hook_env(settings, runtime)
        with pytest.raises(WarmUnavailable):  # its own timeout, or the server's error answer
            await asyncio.to_thread(ask, "slow", env, None, wait=0.3)
        await asyncio.sleep(1.5)  # the work would have finished by now, had it gone on
        assert finished == []


async def test_index_embeds_rows_a_hook_wrote_without_vectors(
    store_settings: Settings, runtime: Path
) -> None:
    # Written as a recording hook writes: without a model, so without a vector.
    async with open_container(store_settings) as hook:
        await hook.memories.append(PROJECT, Layer.EPISODIC, "The payment webhooks run FastAPI.")
    lazy, _ = ready_fake()
    async with open_container(store_settings, embedder=lazy) as c:
        assert c.indexer is not None
        vectors = c.indexer.vectors
        assert await vectors.vector_stats() == (0, 1)
        async with listening(c, runtime):
            answer = await ask_async("index", hook_env(store_settings, runtime))
            assert answer == {"ok": True, "indexing": True}
            for _ in range(300):  # the backfill runs after the answer
                if await vectors.vector_stats() == (1, 0):
                    break
                await asyncio.sleep(0.05)
            assert await vectors.vector_stats() == (1, 0)  # (with a vector, without)


async def test_one_listener_per_store_and_the_next_takes_over(
    settings: Settings, runtime: Path
) -> None:
    async with open_container(settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        env = hook_env(settings, runtime)
        second_started: asyncio.Future[HookListener] = asyncio.Future()
        async with listening(c, runtime) as first:
            second = serving(c, runtime, second_started.set_result, retry=0.02)
            await asyncio.sleep(0.2)  # several retries: the lock is held, so it waits
            assert not second_started.done()
            assert (await ask_async("user-prompt-submit", env, prompt_payload()))["ok"]
        assert not first.path.exists()
        taken = await asyncio.wait_for(second_started, 30)
        assert taken.path == first.path
        answer = await ask_async(
            "user-prompt-submit", env, prompt_payload("billing cluster?", "s2")
        )
        assert BILLING in answer["context"]
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        assert not taken.path.exists()


async def test_a_dead_listeners_socket_is_refused_then_replaced(
    settings: Settings, runtime: Path
) -> None:
    directory = socket_dir({"XDG_RUNTIME_DIR": str(runtime)})
    directory.mkdir(mode=0o700)
    identity = store_identity(settings.database_url, settings.db)
    assert identity is not None
    stale = directory / socket_name(identity)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))  # bound, never listening, then closed: what a killed server leaves
    dead.close()
    env = hook_env(settings, runtime)
    with pytest.raises(WarmUnavailable, match="ConnectionRefusedError"):
        ask("user-prompt-submit", env, prompt_payload())
    async with open_container(settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        async with listening(c, runtime) as listener:
            assert listener.path == stale
            answer = await ask_async("user-prompt-submit", env, prompt_payload())
            assert BILLING in answer["context"]


async def test_a_removed_socket_file_is_bound_again(settings: Settings, runtime: Path) -> None:
    """A /tmp cleaner may remove an old socket file under a long-running server."""
    async with open_container(settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        bound: asyncio.Queue[HookListener] = asyncio.Queue()
        task = serving(c, runtime, bound.put_nowait, retry=0.02)
        try:
            listener = await asyncio.wait_for(bound.get(), 30)
            listener.path.unlink()
            assert await asyncio.wait_for(bound.get(), 30) is listener  # listening again
            answer = await ask_async(
                "user-prompt-submit", hook_env(settings, runtime), prompt_payload()
            )
            assert BILLING in answer["context"]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def test_no_server_or_warm_off_is_unavailable_at_once(settings: Settings, runtime: Path) -> None:
    env = hook_env(settings, runtime)
    with pytest.raises(WarmUnavailable, match="missing or not private"):
        ask("user-prompt-submit", env, prompt_payload())  # no directory yet
    socket_dir(env).mkdir(mode=0o700)
    with pytest.raises(WarmUnavailable, match="FileNotFoundError"):
        ask("user-prompt-submit", env, prompt_payload())
    for off in ("false", "0", "OFF", "maybe"):
        with pytest.raises(WarmUnavailable, match="off"):
            ask("user-prompt-submit", {**env, "memstrata_hooks__warm": off}, prompt_payload())
    with pytest.raises(WarmUnavailable, match="off"):
        ask("user-prompt-submit", {**env, "MEMSTRATA_HOOKS": '{"WARM": false}'}, prompt_payload())
    with pytest.raises(WarmUnavailable, match="in-memory"):
        ask("index", {**env, "MEMSTRATA_DB": ":memory:"})


def test_the_warm_settings_follow_the_settings_reader() -> None:
    assert warm_enabled({}) and warm_enabled({"MEMSTRATA_HOOKS__WARM": "yes"})
    # The last of two spellings wins, as in server.settings.
    assert not warm_enabled({"MEMSTRATA_HOOKS__WARM": "1", "Memstrata_Hooks__Warm": "no"})
    # A __ variable wins over the group's JSON.
    assert warm_enabled({"MEMSTRATA_HOOKS": '{"warm": false}', "MEMSTRATA_HOOKS__WARM": "1"})
    assert warm_wait({}) == 0.8 and warm_wait({"MEMSTRATA_HOOKS__WARM_WAIT": "2.5"}) == 2.5
    assert warm_wait({"MEMSTRATA_HOOKS": '{"warm_wait": 0.3}'}) == 0.3
    assert warm_wait({"MEMSTRATA_HOOKS__WARM_WAIT": "soon"}) == 0.8
    # Each accepted value is one the settings accept, and they agree on it.
    for value in ("true", "off", "1", "N"):
        policy = Settings.model_validate({"hooks": {"warm": value}}).hooks
        assert policy.warm is warm_enabled({"MEMSTRATA_HOOKS__WARM": value})


def test_the_store_identity_is_the_resolved_file_or_the_url(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    via_link = store_identity(None, tmp_path / "link" / "m.db")
    assert via_link == store_identity(None, tmp_path / "real" / ".." / "real" / "m.db")
    assert via_link == f"sqlite:{(tmp_path / 'real' / 'm.db').resolve()}"
    assert store_identity("postgresql://h/db", tmp_path / "m.db") == "postgres:postgresql://h/db"
    assert store_identity(None, Path(":memory:")) is None


def test_unsafe_directories_are_refused(runtime: Path) -> None:
    """Open to others, owned by another user, or a symlink: no listener, no client."""
    from server.hooks.listener import prepare_dir

    fresh = runtime / "fresh"
    assert prepare_dir(fresh) and fresh.stat().st_mode & 0o777 == 0o700
    open_to_others = runtime / "open"
    open_to_others.mkdir(mode=0o700)
    open_to_others.chmod(0o755)
    link = runtime / "link"
    link.symlink_to(fresh)
    for path in (open_to_others, link):
        assert not prepare_dir(path) and not private_dir(path)
    foreign = runtime / "foreign"
    foreign.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(foreign, 65534, 65534)
        assert not prepare_dir(foreign) and not private_dir(foreign)
    assert not private_dir(fresh, uid=os.getuid() + 1)  # as seen by another user


async def test_serve_hooks_does_not_listen_in_an_unsafe_directory(
    settings: Settings, runtime: Path
) -> None:
    (runtime / "memstrata").mkdir(mode=0o755)
    (runtime / "memstrata").chmod(0o755)
    async with open_container(settings) as c:
        await asyncio.wait_for(
            serve_hooks(ListenerParts.of(c), environ={"XDG_RUNTIME_DIR": str(runtime)}), 30
        )  # returns at once: nothing to serve
    assert list((runtime / "memstrata").iterdir()) == []


def test_the_runtime_directory_is_used_only_when_it_is_ours(runtime: Path) -> None:
    assert socket_dir({"XDG_RUNTIME_DIR": str(runtime)}) == runtime / "memstrata"
    me = os.getuid()
    fallback = Path(f"/tmp/memstrata-{me}")
    assert socket_dir({}) == fallback
    assert socket_dir({"XDG_RUNTIME_DIR": "relative/dir"}) == fallback
    assert socket_dir({"XDG_RUNTIME_DIR": str(runtime / "missing")}) == fallback
    assert socket_dir({"XDG_RUNTIME_DIR": str(runtime)}, uid=me + 1) == Path(
        f"/tmp/memstrata-{me + 1}"
    )


def test_the_peer_check_on_a_socket_pair() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert peer_allowed(left)
        if hasattr(socket, "SO_PEERCRED"):
            assert not peer_allowed(left, uid=os.getuid() + 1)
    assert not peer_allowed(None)


def connect_as(user: int, path: Path, request: str) -> bytes:
    """Everything the listener says to a peer running as `user` (a forked child that drops
    to that uid, connects and sends `request`)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing but system calls, then _exit
        code = 1
        try:
            os.close(read_end)
            os.setgid(user)
            os.setuid(user)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(30)
            sock.connect(str(path))
            # Closed at once: the send may meet a closed pipe, the read a reset.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(request.encode() + b"\n")
                while chunk := sock.recv(65536):
                    os.write(write_end, chunk)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the peer could not connect"
    return data


def let_others_reach(listener: HookListener, runtime: Path) -> None:
    """Test-only: let another uid reach the socket (the listener keeps it 0700 and 0600)."""
    runtime.chmod(0o755)
    listener.path.parent.chmod(0o711)
    listener.path.chmod(0o666)


@pytest.mark.skipif(
    os.geteuid() != 0 or not hasattr(socket, "SO_PEERCRED"),
    reason="needs root (to run a peer as another user) and SO_PEERCRED",
)
async def test_a_peer_of_another_uid_is_closed_without_an_answer(
    settings: Settings, runtime: Path
) -> None:
    async with open_container(settings) as c:
        await c.memories.append(PROJECT, Layer.EPISODIC, BILLING)
        async with listening(c, runtime) as listener:
            let_others_reach(listener, runtime)
            request = json.dumps(
                {
                    "v": 1,
                    "op": "user-prompt-submit",
                    "store": listener.parts.identity,
                    "env": hook_env(settings, runtime),
                    "payload": prompt_payload(),
                }
            )
            other = await asyncio.to_thread(connect_as, 65534, listener.path, request)
            assert other == b""  # closed, nothing said
            ours = await asyncio.to_thread(connect_as, os.getuid(), listener.path, request)
            assert BILLING in json.loads(ours)["context"]
