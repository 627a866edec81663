"""Reading a client's JSON settings file without trusting what is at its path.

`memstrata setup` and `memstrata doctor` read Claude Code's and Claude Desktop's settings files.
Whatever sits at those paths gets a one-line answer naming the file, never a traceback or a
hang: a named pipe (opening one for reading waits for a writer), a device such as /dev/zero
(endless), a file too large to be settings, text that is not UTF-8 or not JSON, JSON nested so
deep that parsing it exhausts Python's stack, and numbers Python reads as infinity (`1e400`),
which would be written back as `Infinity`, a token JSON does not have. A symbolic link is read
through; `target` says where the bytes are, so a writer can replace the file the link points to
rather than the link.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "MAX_DEPTH", "SettingsFile", "SettingsFileError", "read_settings_file"]

# Claude Code keeps per-project history in ~/.claude.json, which grows to a few megabytes; a
# settings file larger than this is not one.
MAX_BYTES = 64 * 1024 * 1024
# Settings are a handful of levels deep; copying and rendering a document recurse once per level.
MAX_DEPTH = 100

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SettingsFileError(Exception):
    """A settings file that cannot be read as a JSON object; `reason` completes `path`."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class SettingsFile:
    """A settings file as read: its text (None: no such file) and its JSON object."""

    path: Path
    target: Path
    text: str | None
    document: dict[str, Any]


class _NotFinite(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NotFinite(token)
    return value


def _constant(token: str) -> Any:
    raise _NotFinite(token)  # NaN, Infinity, -Infinity: Python accepts them, JSON has none


def _too_deep(value: Any) -> bool:
    """Whether value nests more than MAX_DEPTH containers (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


def _kind(mode: int) -> str | None:
    """What a non-regular file is ("a named pipe", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _target(path: Path) -> Path:
    """Where the bytes behind path are: the end of its symbolic links, else path itself."""
    if not path.is_symlink():
        return path
    return Path(os.path.realpath(path))


def _read_bytes(path: Path) -> bytes | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise SettingsFileError(
                path, f"is a symbolic link to {os.readlink(path)}, which does not exist"
            ) from None
        return None
    except OSError as exc:
        raise SettingsFileError(path, f"cannot be read ({exc.strerror})") from exc
    if kind := _kind(info.st_mode):
        raise SettingsFileError(path, f"is {kind}, not a regular file")
    if info.st_size > MAX_BYTES:
        raise SettingsFileError(path, f"is larger than {MAX_BYTES // 2**20} MiB")
    # O_NONBLOCK: should a pipe replace the file after the check, opening it does not wait.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SettingsFileError(path, f"cannot be read ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as fh:
        if kind := _kind(os.fstat(fd).st_mode):
            raise SettingsFileError(path, f"is {kind}, not a regular file")
        try:
            data = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise SettingsFileError(path, f"cannot be read ({exc.strerror})") from exc
    if len(data) > MAX_BYTES:
        raise SettingsFileError(path, f"is larger than {MAX_BYTES // 2**20} MiB")
    return data


def _parse(path: Path, text: str) -> Any:
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise SettingsFileError(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except _NotFinite as exc:
        raise SettingsFileError(
            path,
            f"holds the number {exc.token[:40]}, which has no finite value and could not be "
            "written back as JSON",
        ) from None
    except RecursionError:
        raise SettingsFileError(path, f"nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer of more digits than int() converts
        raise SettingsFileError(path, f"holds a value that cannot be read ({exc})") from None
    if _too_deep(value):
        raise SettingsFileError(path, f"nests deeper than {MAX_DEPTH} levels")
    return value


def read_settings_file(path: Path) -> SettingsFile:
    """The file's text and JSON object ({} for a missing or blank file); SettingsFileError else."""
    data = _read_bytes(path)
    if data is None:
        return SettingsFile(path, _target(path), None, {})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsFileError(path, f"is not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        return SettingsFile(path, _target(path), text, {})
    value = _parse(path, text)
    if not isinstance(value, dict):
        raise SettingsFileError(path, "does not hold a JSON object")
    return SettingsFile(path, _target(path), text, value)
