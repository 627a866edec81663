"""The answers `memstrata serve` gave a client's first requests, kept for the next start.

Trigger: Claude Code waits for a stdio server's answers to `server/discover` (or `initialize`),
`subscriptions/listen`, `tools/list`, `prompts/list` and `resources/list` before its first
model request, and the MCP SDK alone takes ~0.6 s to import (seconds on a loaded machine,
where the client's version probe timed out; issue 31). Why: those answers depend only on the
code, the configuration and what the client sent, so the ones the SDK server gave last time
are exact for the next process started the same way. Outcome: server.cli.lean_serve answers
from here before the SDK is imported, and records what the SDK answered when this holds
nothing yet.

A file per fingerprint of what shapes an answer: every file of the `server` and `memory_core`
packages (path, size, modification time), the installed MCP SDK and pydantic (their
dist-info names), the MEMSTRATA_* variables, the command's arguments and, where the project
follows the working directory (MEMSTRATA_PROJECT_SCOPE git or path), that directory. Inside,
each answer is keyed by the request itself (method and params, `_meta` and client info
included) and the conversation state it arrived in (see `request_key`), so two clients that
ask differently never share an answer. Stdlib only: it runs before anything heavy is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["AnswerCache", "cache_dir", "fingerprint", "request_key"]

FORMAT = 1

# The packages whose installed version shapes a wire answer (schemas, serialisation).
_LIBRARIES = ("mcp", "mcp_types", "pydantic", "pydantic_core")

# A file not written for this long is another code version's or configuration's: removed
# when a new one is written.
_STALE_S = 30 * 24 * 3600
_KEPT = 16  # at most this many files (a test suite starts servers on many databases)

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # holds server/ and memory_core/


def cache_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/memstrata/serve`, by default `~/.cache/memstrata/serve`."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata" / "serve"


def _code_files() -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int]] = []
    for package in ("server", "memory_core"):
        stack = [_PACKAGE_ROOT / package]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "__pycache__":
                            stack.append(Path(entry.path))
                        continue
                    info = entry.stat()
                    found.append((entry.path, info.st_size, info.st_mtime_ns))
    return sorted(found)


def _libraries() -> list[str]:
    """The dist-info directory names (which carry the versions) of `_LIBRARIES`."""
    prefixes = tuple(f"{name}-" for name in _LIBRARIES)
    names: list[str] = []
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        names += [
            f"{entry}/{name}"
            for name in listing
            if name.endswith(".dist-info") and name.startswith(prefixes)
        ]
    return sorted(names)


def _follows_cwd(environ: Mapping[str, str]) -> bool:
    """Whether the default project (and so what the server lists) depends on the directory."""
    scopes = [v for k, v in environ.items() if k.upper() == "MEMSTRATA_PROJECT_SCOPE"]
    return any(value not in ("", "fixed") for value in scopes)


def fingerprint(argv: Sequence[str], environ: Mapping[str, str], cwd: str) -> str:
    """What the first answers of `memstrata serve ARGV` can depend on, hashed."""
    config = sorted((k, v) for k, v in environ.items() if k.upper().startswith("MEMSTRATA_"))
    parts = {
        "format": FORMAT,
        "python": sys.version,
        "code": _code_files(),
        "libraries": _libraries(),
        "argv": list(argv),
        "environment": config,
        "cwd": cwd if _follows_cwd(environ) else None,
    }
    return _digest(parts)


def request_key(state: Any, method: str, params: Any) -> str:
    """The key of a request's answer: the request and the conversation state before it."""
    return _digest([state, method, params])


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AnswerCache:
    """The recorded answers of one fingerprint: a JSON file of key -> answer.

    An answer is `{"result": ...}` (a response's result) or `{"ack": ...}` (the params of the
    acknowledgement a `subscriptions/listen` gets first, its subscription id left out).
    A missing, unreadable or foreign file is an empty cache: the SDK answers, as it always did.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.answers: dict[str, dict[str, Any]] = self._read()

    @classmethod
    def for_start(cls, argv: Sequence[str], environ: Mapping[str, str], cwd: str) -> AnswerCache:
        """The cache of a process started with `argv` in `environ` and `cwd`."""
        name = fingerprint(argv, environ, cwd)[:32] + ".json"
        return cls(cache_dir(environ) / name)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        answers = data.get("answers")
        return answers if isinstance(answers, dict) else {}

    def get(self, key: str) -> dict[str, Any] | None:
        """The answer recorded under `key`, if any."""
        answer = self.answers.get(key)
        return answer if isinstance(answer, dict) else None

    def put(self, key: str, answer: dict[str, Any] | None) -> None:
        """Record (or, with None, forget) an answer and write the file.

        What another process wrote meanwhile is kept; failures to write are ignored (the next
        start then asks the SDK again).
        """
        on_disk = self._read()
        if answer is None:
            self.answers.pop(key, None)
            on_disk.pop(key, None)
        else:
            self.answers[key] = answer
            on_disk[key] = answer
        import tempfile  # only when an answer is recorded: a start that finds them needs none

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".answers-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"format": FORMAT, "answers": on_disk}, out, ensure_ascii=False)
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            Path(tmp).unlink(missing_ok=True)
            return
        self._remove_stale()

    def _remove_stale(self) -> None:
        """Remove the files of other fingerprints unused for _STALE_S, or beyond _KEPT."""
        try:
            with os.scandir(self.path.parent) as entries:
                others = [
                    (entry.stat().st_mtime, entry.path)
                    for entry in entries
                    if entry.path != str(self.path)
                ]
        except OSError:
            return
        others.sort(reverse=True)
        cutoff = time.time() - _STALE_S
        for place, (mtime, path) in enumerate(others):
            if mtime < cutoff or place >= _KEPT - 1:
                with contextlib.suppress(OSError):
                    os.unlink(path)
