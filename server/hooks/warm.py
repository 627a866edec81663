"""Ask the warm `memstrata serve` of this store to run a hook: the lean client, stdlib only.

Trigger: `memstrata hook user-prompt-submit` starts a fresh process, which cannot load the
embedding model within a prompt's budget, so on its own it searches by keywords only. Why:
the `memstrata serve` Claude Code started for the session holds the model warm and the store
open; it listens on a per-user Unix socket (server.hooks.listener) and answers in a few
milliseconds with hybrid search. Outcome: the hook sends one JSON line and reads one back;
when no server answers in time (none running, a stale socket, a dead or busy server), the
caller goes on with its own direct path, having lost at most the failed connect (microseconds
for a missing or refused socket).

This module is imported before pydantic, structlog or server.settings (each costs a cold hook
milliseconds), so it reads the few MEMSTRATA_* variables it needs by hand, with the settings
reader's rule for names (case-insensitive, the last spelling wins).
The listener uses the same functions to find its socket, so both always agree.
"""

from __future__ import annotations

import _socket  # socket.py adds ~3 ms of imports (selectors, enum) a hook does not need
import json
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from server.early_env import default_db_path, env_values

if TYPE_CHECKING:
    from typing import Any

try:  # the builtin sha256 loads in ~1 ms; hashlib loads OpenSSL first (~3 ms of a cold hook)
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # Python 3.12+ renamed it
    from hashlib import sha256

__all__ = [
    "DEFAULT_WAIT",
    "MAX_REQUEST_BYTES",
    "PROTOCOL",
    "WarmUnavailable",
    "ask",
    "env_store",
    "forwarded_env",
    "socket_dir",
    "socket_name",
    "store_identity",
    "warm_enabled",
    "warm_wait",
]

PROTOCOL = 1
# The largest request line the listener reads; a bigger hook input goes the direct path.
MAX_REQUEST_BYTES = 1_048_576
_MAX_ANSWER_BYTES = 4_000_000
DEFAULT_WAIT = 0.8
_TRUE = ("1", "on", "t", "true", "y", "yes")  # pydantic's words for booleans
_FALSE = ("0", "off", "f", "false", "n", "no")


class WarmUnavailable(Exception):
    """No warm server answered (none, stale, refused, too slow, or it answered an error)."""


def _last(environ: Mapping[str, str], name: str) -> str | None:
    values = env_values(environ, name)
    return values[-1] if values else None


def _hooks_group(environ: Mapping[str, str]) -> dict[str, Any]:
    """MEMSTRATA_HOOKS as JSON (the settings accept the group whole), lower-cased keys."""
    raw = _last(environ, "MEMSTRATA_HOOKS")
    if not raw:
        return {}
    try:
        group = json.loads(raw)
    except ValueError:
        return {}
    return {str(k).lower(): v for k, v in group.items()} if isinstance(group, dict) else {}


def _hook_setting(environ: Mapping[str, str], name: str) -> object:
    """A hooks setting as the reader merges it: `MEMSTRATA_HOOKS__X` over MEMSTRATA_HOOKS's."""
    value = _last(environ, f"MEMSTRATA_HOOKS__{name.upper()}")
    return value if value is not None else _hooks_group(environ).get(name)


def warm_enabled(environ: Mapping[str, str]) -> bool:
    """MEMSTRATA_HOOKS__WARM (default on).

    A value the settings would reject counts as off: the direct path then reports it as the
    configuration error it is.
    """
    value = _hook_setting(environ, "warm")
    if value is None or value is True:
        return True
    return isinstance(value, str) and value.strip().lower() in _TRUE


def warm_wait(environ: Mapping[str, str]) -> float:
    """MEMSTRATA_HOOKS__WARM_WAIT: seconds for the warm server's answer (default 0.8)."""
    value = _hook_setting(environ, "warm_wait")
    try:
        seconds = float(value) if isinstance(value, (str, int, float)) else DEFAULT_WAIT
    except ValueError:
        return DEFAULT_WAIT
    return seconds if 0 < seconds <= 10 else DEFAULT_WAIT


def env_store(environ: Mapping[str, str]) -> tuple[str | None, Path]:
    """(MEMSTRATA_DATABASE_URL or None, MEMSTRATA_DB or its default), as the settings read them."""
    db = _last(environ, "MEMSTRATA_DB")
    return _last(environ, "MEMSTRATA_DATABASE_URL") or None, Path(db) if db else default_db_path()


def store_identity(database_url: str | None, db: Path) -> str | None:
    """What names one store across processes (None: an in-memory SQLite database).

    The PostgreSQL URL, or the SQLite file's real absolute path (a relative one is taken from
    this process's directory, as the store opens it). An in-memory database cannot be shared.
    """
    if database_url:
        return f"postgres:{database_url}"
    if str(db) == ":memory:":
        return None
    return f"sqlite:{db.resolve()}"


def socket_dir(environ: Mapping[str, str], uid: int | None = None) -> Path:
    """Where the sockets are: `$XDG_RUNTIME_DIR/memstrata`, else `/tmp/memstrata-<uid>`.

    The runtime directory only when it is a directory of ours; the listener creates the
    socket directory 0700 and refuses one that is not (private_dir).
    """
    me = os.getuid() if uid is None else uid
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        try:
            info = os.stat(runtime)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == me:
            return Path(runtime) / "memstrata"
    return Path(f"/tmp/memstrata-{me}")


def private_dir(path: Path, uid: int | None = None) -> bool:
    """Whether `path` is a real directory (not a symlink) of ours that no one else can enter.

    Trigger: /tmp is shared, so another user could create /tmp/memstrata-<our uid> first
    and put a socket of theirs in it. Why: the request carries the hook's MEMSTRATA_*
    variables (a database password, an API key) and the answer goes into the person's
    session. Outcome: neither the client nor the listener uses such a directory.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return False
    me = os.getuid() if uid is None else uid
    return stat.S_ISDIR(info.st_mode) and info.st_uid == me and not info.st_mode & 0o077


def socket_name(identity: str) -> str:
    """The socket's file name for a store: a short hash of its identity."""
    digest: str = sha256(identity.encode()).hexdigest()
    return digest[:16] + ".sock"


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The hook process's MEMSTRATA_* variables: the settings the server builds for the hook."""
    return {k: v for k, v in environ.items() if k.upper().startswith("MEMSTRATA_")}


def _socket_path(environ: Mapping[str, str]) -> tuple[str, Path]:
    identity = store_identity(*env_store(environ))
    if identity is None:
        raise WarmUnavailable("an in-memory database has no server to ask")
    directory = socket_dir(environ)
    if not private_dir(directory):
        raise WarmUnavailable(f"{directory} is missing or not private")
    return identity, directory / socket_name(identity)


def _exchange(path: Path, line: bytes, wait: float) -> bytes:
    deadline = time.monotonic() + wait
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(wait)
        sock.connect(str(path))  # missing: FileNotFoundError; stale: ConnectionRefusedError
        sock.sendall(line)
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer within {wait:g} s")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if chunk.endswith(b"\n") or size > _MAX_ANSWER_BYTES:
                break
    finally:
        sock.close()
    return b"".join(chunks)


def ask(
    op: str,
    environ: Mapping[str, str],
    payload: Mapping[str, Any] | None = None,
    *,
    wait: float | None = None,
) -> dict[str, Any]:
    """Send one request to this store's warm server; its answer (`ok` is true).

    Raises:
        WarmUnavailable: Turned off, no server, a refused or stale socket, no answer within
            `wait` seconds (default MEMSTRATA_HOOKS__WARM_WAIT), or an error answer.
    """
    if not warm_enabled(environ):
        raise WarmUnavailable("MEMSTRATA_HOOKS__WARM is off")
    identity, path = _socket_path(environ)
    seconds = warm_wait(environ) if wait is None else wait
    request: dict[str, Any] = {
        "v": PROTOCOL,
        "op": op,
        "store": identity,
        "wait": seconds,
        "env": forwarded_env(environ),
    }
    if payload is not None:
        request["payload"] = payload
    line = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
    if len(line) > MAX_REQUEST_BYTES:
        raise WarmUnavailable("the hook's input is larger than the warm server reads")
    try:
        raw = _exchange(path, line, seconds)
    except OSError as exc:  # TimeoutError, refused, missing, reset
        raise WarmUnavailable(f"{type(exc).__name__}: {exc}") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise WarmUnavailable("the warm server's answer is not JSON") from None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        error = answer.get("error") if isinstance(answer, dict) else None
        raise WarmUnavailable(f"the warm server answered an error: {error}")
    return answer
