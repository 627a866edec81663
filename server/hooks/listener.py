"""The warm hook listener: a running `memstrata serve` answers hooks on a per-user Unix socket.

Trigger: a hook process is cold and cannot load the embedding model within a prompt's
budget; the server Claude Code started for the session holds it warm. Why: per-prompt recall
by meaning needs the model (keyword search misses paraphrases). Outcome: every `serve`
(stdio and HTTP) of a file or PostgreSQL store tries to listen, once it has started, on
`<socket_dir>/<hash of the store>.sock` (server.hooks.warm finds the same path); the hook
(server.hooks.entry) asks there first and falls back to its direct path.

- One listener per store: the listener holds an exclusive flock on `<hash>.lock` while it
  listens. A serve that cannot take it (another session's server listens) does not listen
  and retries every RETRY_SECONDS, so when the listening server exits or dies, a server of a
  second session takes over. The lock dies with its process, so a socket file left by a
  dead server (the lock is free) is unlinked and bound again.
- Same user only: the directory is created 0700 and refused (a warning, no listener) when
  it is a symlink, not ours, or open to others; the socket is 0600; a peer of another uid
  (SO_PEERCRED, Linux) is closed without an answer.
- Protocol: one JSON request line (at most MAX_REQUEST_BYTES, read within READ_SECONDS),
  one JSON answer line, then close. `{"v": 1, "op": ..., "store": ..., "wait": seconds,
  "env": {MEMSTRATA_*}, "payload": {...}}` -> `{"ok": true, ...}` or `{"ok": false, "error":
  "..."}`. The hook's settings are built from its own MEMSTRATA_* variables, on this server's
  store only; the work is cancelled when the hook's `wait` is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from memory_core.services.indexing import Indexer
from server.hooks.warm import (
    DEFAULT_WAIT,
    MAX_REQUEST_BYTES,
    PROTOCOL,
    private_dir,
    socket_dir,
    socket_name,
    store_identity,
)
from server.settings import Settings, SettingsFields, describe_settings_error, environment_values

if TYPE_CHECKING:
    from memory_core.embeddings import LazyEmbedder
    from server.backends import Backend
    from server.container import Container

__all__ = [
    "OPS",
    "HookListener",
    "ListenerParts",
    "peer_allowed",
    "prepare_dir",
    "serve_hooks",
]

log = structlog.get_logger(__name__)

RETRY_SECONDS = 30.0
READ_SECONDS = 2.0
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where it is unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None  # no SO_PEERCRED (macOS, BSD): the 0700 directory is the guard
    raw = sock.getsockopt(socket.SOL_SOCKET, option, _PEERCRED.size)
    return int(_PEERCRED.unpack(raw)[1])


def peer_allowed(sock: Any, uid: int | None = None) -> bool:
    """Whether the peer is this user (`uid`, default ours), or cannot be told apart from one.

    `sock` is a socket or asyncio's wrapper of one (a stream's extra info "socket").
    """
    if sock is None:
        return False
    try:
        peer = peer_uid(sock)
    except OSError:
        return False
    return peer is None or peer == (os.getuid() if uid is None else uid)


def prepare_dir(directory: Path) -> bool:
    """Create the socket directory 0700 if missing; whether it is safe to listen in.

    A directory that exists but is a symlink, not ours, or open to group or others is
    refused: another user may have made it to receive our hooks' requests.
    """
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        log.warning("hooks.listener_no_dir", directory=str(directory), error=str(exc))
        return False
    if not private_dir(directory):
        log.warning(
            "hooks.listener_unsafe_dir",
            directory=str(directory),
            reason="a symlink, not ours, or open to group or others; not listening",
        )
        return False
    return True


@dataclass
class ListenerParts:
    """What the listener serves hooks with: the server's open store, embedder and indexer."""

    settings: Settings
    backend: Backend
    embedder: LazyEmbedder | None
    indexer: Indexer | None  # the server's: `index` schedules its backfill

    @cached_property
    def identity(self) -> str | None:
        """The store's identity (server.hooks.warm.store_identity)."""
        return store_identity(self.settings.database_url, self.settings.db)

    @cached_property
    def hook_indexer(self) -> Indexer | None:
        """The prompt hook's indexer: the server's vectors and model, never waiting.

        A search through the server's indexer waits up to embedding_wait for a model still
        loading or a backfill still running, past the hook's budget; the hook's search goes on
        at once, finding rows not embedded yet by their words meanwhile.
        """
        if self.indexer is None:
            return None
        return Indexer(vectors=self.indexer.vectors, source=self.indexer.source, model_wait=0.0)

    @classmethod
    def of(cls, container: Container) -> ListenerParts:
        """The parts of a server's open container."""
        if container.backend is None:
            raise ValueError("the container has no backend to serve hooks on")
        return cls(container.settings, container.backend, container.embedder, container.indexer)


Op = Callable[[ListenerParts, dict[str, Any]], Awaitable[dict[str, Any]]]


@lru_cache(maxsize=16)
def _settings_of(env: tuple[tuple[str, str], ...], database_url: str | None, db: Path) -> Settings:
    """The hook's settings from its MEMSTRATA_* variables, on this server's store.

    Cached: one session's hooks send the same variables on every prompt.
    """
    values = environment_values(SettingsFields, dict(env))
    values.update(database_url=database_url, db=db)
    # model_validate, not Settings(): the server's own environment must not leak in.
    return Settings.model_validate(values)


def hook_settings(parts: ListenerParts, env: Mapping[str, str]) -> Settings:
    """The settings a hook with these MEMSTRATA_* variables would have, on our store."""
    own = parts.settings
    return _settings_of(tuple(sorted(env.items())), own.database_url, own.db)


def _hook_op(command: str) -> Op:
    """An op that runs hook `command` (a CLI event name) as the hook's own process would."""

    async def answer(parts: ListenerParts, request: dict[str, Any]) -> dict[str, Any]:
        from server.hooks import events, subagents
        from server.hooks.payload import EVENTS, ToolDenial, parse_payload
        from server.hooks.services import HookServices

        handlers = {
            "UserPromptSubmit": events.user_prompt_submit,
            "PreToolUse": events.pre_tool_use,
            "SubagentStart": subagents.subagent_start,
        }
        payload = parse_payload(json.dumps(request.get("payload")), command)
        settings = hook_settings(parts, request["env"])
        svc = HookServices(
            settings,
            parts.backend,
            embedder=parts.embedder,
            indexer=parts.hook_indexer,
            recording=False,
        )
        context = await handlers[EVENTS[command]](svc, payload)
        answer: dict[str, Any] = {"ok": True, "context": context}
        if isinstance(context, ToolDenial):
            answer["deny"] = True  # a blocking rule's denial (events.pre_tool_use), not context
        return answer

    return answer


async def _index(parts: ListenerParts, request: dict[str, Any]) -> dict[str, Any]:
    """Embed rows a hook wrote without vectors, in the background; answers at once."""
    indexer = parts.indexer
    if indexer is not None:
        if indexer.source.current() is None:
            indexer.backfill_when_ready()  # runs once the model loads (at its first use)
        else:
            indexer.schedule_backfill()
    return {"ok": True, "indexing": indexer is not None}


# op -> what answers it; another hook event is served by adding its coroutine here.
OPS: dict[str, Op] = {
    "user-prompt-submit": _hook_op("user-prompt-submit"),
    "pre-tool-use": _hook_op("pre-tool-use"),
    "subagent-start": _hook_op("subagent-start"),
    "index": _index,
}


def _wait_of(request: dict[str, Any]) -> float:
    """How long the hook waits for the answer (`wait`, seconds), within 0.05 and 10."""
    wait = request.get("wait")
    if not isinstance(wait, (int, float)) or isinstance(wait, bool):
        return DEFAULT_WAIT
    return min(max(float(wait), 0.05), 10.0)


def _error(text: str) -> dict[str, Any]:
    return {"ok": False, "error": " ".join(text.split())[:500]}


class HookListener:
    """One store's listener: the lock, the socket, and the requests."""

    def __init__(self, parts: ListenerParts, directory: Path) -> None:
        self.parts = parts
        assert parts.identity is not None
        name = socket_name(parts.identity)
        self.path = directory / name
        self.lock_path = directory / name.replace(".sock", ".lock")
        self._lock_fd: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._inode: int | None = None  # of the socket file we bound
        self._requests: set[asyncio.Task[Any]] = set()

    @property
    def listening(self) -> bool:
        """Whether this process holds the lock and serves the socket."""
        return self._server is not None

    def _take_lock(self) -> bool:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._lock_fd = fd
        return True

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    async def start(self) -> bool:
        """Take the lock and listen; False when another process listens for this store."""
        if self._server is not None:
            return True
        if not self._take_lock():
            return False
        try:
            # We hold the lock, so a socket file here is a dead listener's: nobody answers it.
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._server = await asyncio.start_unix_server(
                self._handle, path=str(self.path), limit=MAX_REQUEST_BYTES
            )
            os.chmod(self.path, 0o600)
            self._inode = os.stat(self.path).st_ino
        except BaseException:
            await self.stop()
            raise
        log.info("hooks.listening", socket=str(self.path))
        return True

    def still_bound(self) -> bool:
        """Whether our socket file is still there (a /tmp cleaner may remove old files)."""
        try:
            return os.stat(self.path).st_ino == self._inode
        except OSError:
            return False

    async def stop(self) -> None:
        """Stop listening and end the requests in flight (the store closes next).

        The socket file is removed only while we hold the lock.
        """
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        for task in list(self._requests):
            task.cancel()
        await asyncio.gather(*self._requests, return_exceptions=True)
        if self._lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        self._release_lock()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._requests.add(task)
        try:
            if not peer_allowed(writer.get_extra_info("socket")):
                log.warning("hooks.listener_peer_refused")
                return  # another user: closed without a word
            answer = await self._answer(reader)
            writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, TimeoutError):
            pass  # the hook gave up or went away; it falls back on its own
        except Exception:
            log.exception("hooks.listener_failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._requests.discard(task)

    async def _answer(self, reader: asyncio.StreamReader) -> dict[str, Any]:
        try:
            line = await asyncio.wait_for(reader.readline(), READ_SECONDS)
        except ValueError:
            return _error(f"request larger than {MAX_REQUEST_BYTES} bytes")
        try:
            request = json.loads(line)
        except ValueError:
            return _error("request is not a JSON line")
        if not isinstance(request, dict) or request.get("v") != PROTOCOL:
            return _error(f"expected a JSON object with v={PROTOCOL}")
        op = OPS.get(str(request.get("op")))
        if op is None:
            return _error(f"unknown op {request.get('op')!r}; served: {', '.join(OPS)}")
        env = request.get("env")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            return _error("env must be an object of strings")
        if request.get("store") != self.parts.identity:
            return _error("the request names another store than this server's")
        started = time.perf_counter()
        try:
            # Within the hook's own wait: past it the hook has gone its own way, and a late
            # answer's writes (memories marked as injected) would hide them from that way.
            answer = await asyncio.wait_for(op(self.parts, request), _wait_of(request))
        except TimeoutError:
            log.info("hooks.listener_too_slow", op=request.get("op"))  # the hook went direct
            return _error("no answer within the hook's wait")
        except Exception as exc:  # configuration, payload or store: the hook goes direct
            from pydantic import ValidationError

            from server.settings import SettingsError

            if isinstance(exc, (ValidationError, SettingsError)):
                return _error(describe_settings_error(exc))
            log.warning("hooks.listener_op_failed", op=request.get("op"), error=str(exc))
            return _error(f"{type(exc).__name__}: {exc}")
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.debug("hooks.answered", op=request.get("op"), ms=ms)
        return answer


async def serve_hooks(
    parts: ListenerParts,
    *,
    environ: Mapping[str, str] | None = None,
    retry_seconds: float = RETRY_SECONDS,
    on_listening: Callable[[HookListener], None] | None = None,
) -> None:
    """Listen for hooks until cancelled, taking over when another listener goes away.

    Does nothing (a warning or a debug line) where it cannot: an in-memory store, no Unix
    sockets or flock on this platform, or an unsafe directory.
    """
    if parts.identity is None or not hasattr(socket, "AF_UNIX"):
        log.debug("hooks.listener_off", reason="in-memory store or no Unix sockets")
        return
    directory = socket_dir(os.environ if environ is None else environ)
    listener = HookListener(parts, directory)
    try:
        while True:
            if not listener.listening:
                if not prepare_dir(directory):
                    return
                try:
                    started = await listener.start()
                except OSError as exc:  # e.g. a path too long for a Unix socket
                    log.warning("hooks.listener_failed_to_bind", error=str(exc))
                    return
                if started and on_listening is not None:
                    on_listening(listener)
            # Not listening: another server is; take over if it goes. Listening: check that
            # the socket file is still ours, and bind it again if it was removed.
            await asyncio.sleep(retry_seconds)
            if listener.listening and not listener.still_bound():
                log.warning("hooks.listener_socket_gone", socket=str(listener.path))
                await listener.stop()
    finally:
        await listener.stop()
