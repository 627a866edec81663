"""Who a git checkout is, read from its files: no git process, no import beyond the stdlib.

A hook process has a prompt's budget (server.hooks.entry), and `git config --get` costs a
fork and exec per call (~2-5 ms on a quiet machine, far more on a loaded one), so the layout
is read here the way git itself finds it:

- the work tree is the nearest directory at or above the one asked about that holds `.git`;
- `.git` is the git directory, or a file `gitdir: <path>` (a linked worktree, a submodule)
  whose path is relative to the file's directory;
- a git directory holding `commondir` (a linked worktree) shares that directory's `config`
  (and its remotes) with the main repository, whose work tree is the common directory's
  parent when the common directory is named `.git`;
- the remote is `origin`, else the first remote with a url, from `<common dir>/config`.

Not followed: `include`/`includeIf` files, `url.<base>.insteadOf` rewriting, GIT_DIR and
GIT_WORK_TREE, ssh host aliases; a checkout relying on one of them for its remote is named
by what its own config says.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Checkout", "checkout_of", "git_root", "normalise_remote", "remote_urls"]

_CONFIG_MAX_BYTES = 1 << 20  # a config is a few hundred bytes; never read a huge file whole


@dataclass(frozen=True)
class Checkout:
    """A git work tree: where it is, where its main repository's is, and its remote.

    Attributes:
        root: The work tree holding the directory (a linked worktree's own root).
        main_root: The main repository's work tree (the same as `root` except for a linked
            worktree), so worktrees of one repository share it.
        remote: The normalised url of `origin`, else of the first remote; None without one.
    """

    root: Path
    main_root: Path
    remote: str | None


def git_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` that holds `.git` (no git process)."""
    current = str(directory)  # strings: pathlib's joins cost more than the stat calls
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return Path(current)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def checkout_of(directory: Path) -> Checkout | None:
    """The checkout holding `directory` (an absolute, resolved path), or None outside git."""
    root = git_root(directory)
    if root is None:
        return None
    git_dir = _git_dir(root / ".git")
    if git_dir is None:
        return Checkout(root, root, None)  # an unreadable `.git`: a work tree without remote
    common = _common_dir(git_dir)
    main_root = root
    if common != git_dir:
        main_root = common.parent if common.name == ".git" else common
    return Checkout(root, main_root, _first_remote(common / "config", root))


def _git_dir(dot_git: Path) -> Path | None:
    """The git directory `.git` stands for: itself, or the target of its `gitdir:` line."""
    if dot_git.is_dir():
        return dot_git
    text = _read_small(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text.splitlines()[0][len("gitdir:") :].strip()
    if not target:
        return None
    path = Path(target)
    return Path(os.path.normpath(path if path.is_absolute() else dot_git.parent / path))


def _common_dir(git_dir: Path) -> Path:
    """The directory a linked worktree shares with its main repository (`commondir`)."""
    text = _read_small(git_dir / "commondir")
    if not text or not text.strip():
        return git_dir
    target = Path(text.strip().splitlines()[0])
    return Path(os.path.normpath(target if target.is_absolute() else git_dir / target))


def _read_small(path: Path) -> str | None:
    """A small text file's content, or None when it is missing, unreadable or huge."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_CONFIG_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > _CONFIG_MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _first_remote(config: Path, root: Path) -> str | None:
    """The normalised url of `origin`, else of the first remote with a usable url.

    Cached by the file's size, inode and change time: a server asks for every call that
    names no project, and an edited config (`git remote set-url`) is read again.
    """
    try:
        seen = os.stat(config)
    except OSError:
        return None
    return _remote_of(str(config), str(root), (seen.st_mtime_ns, seen.st_size, seen.st_ino))


@functools.lru_cache(maxsize=64)
def _remote_of(config: str, root: str, signature: tuple[int, int, int]) -> str | None:
    del signature  # part of the cache key only
    text = _read_small(Path(config))
    if text is None:
        return None
    urls = remote_urls(text)
    ordered = ([urls.pop("origin")] if "origin" in urls else []) + list(urls.values())
    for url in ordered:
        if (normal := normalise_remote(url, Path(root))) is not None:
            return normal
    return None


_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?\Z", re.DOTALL)


def remote_urls(config_text: str) -> dict[str, str]:
    """Each remote's first `url` in a git config file's text, in the order remotes appear.

    Follows git's syntax where it matters for a url: section and key names are
    case-insensitive, `[remote "name"]` keeps the name's case, `[remote.name]` lowers it;
    values may be quoted, hold backslash escapes, end in a `#` or `;` comment and continue on the
    next line after a trailing backslash.
    """
    urls: dict[str, str] = {}
    remote: str | None = None
    for line in _logical_lines(config_text):
        rest = line.strip()
        while rest.startswith("["):
            match = _SECTION.match(rest)
            if match is None:
                remote = None
                rest = ""
                break
            section, sub = match.group(1).lower(), match.group(2)
            if sub is None and "." in section:
                section, _, sub = section.partition(".")
            elif sub is not None:
                sub = re.sub(r"\\(.)", r"\1", sub)
            remote = sub if section == "remote" else None
            rest = rest[match.end() :].strip()
        if not rest or rest[0] in "#;" or remote is None:
            continue
        key = _KEY.match(rest)
        if key is None or key.group(1).lower() != "url" or key.group(2) is None:
            continue
        value = _value(key.group(2))
        if value and remote not in urls:
            urls[remote] = value
    return urls


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where one ends in an unescaped backslash (a continuation)."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.rstrip("\r")
        body = stripped.rstrip()
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2 == 1:
            pending += body[:-1]
            continue
        lines.append(pending + stripped)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(raw: str) -> str:
    """A config value: quotes removed, escapes applied, an unquoted comment cut off."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append(_ESCAPES.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)\Z", re.DOTALL)
# scp-like `[user@]host:path`: no slash before the colon (git's own test for it).
_SCP = re.compile(r"(?:[^@/]*@)?(\[[^\]/]+\]|[^:/]+):(.*)\Z", re.DOTALL)


def normalise_remote(url: str, root: Path | None = None) -> str | None:
    """A remote url as one stable identity, or None for an empty or unusable url.

    `host/path` for a network remote: `github.com/acme/api` for `git@github.com:acme/api.git`,
    `https://u:token@GitHub.com/acme/api` and `ssh://git@github.com:22/acme/api/` alike;
    `file:/abs/path` for a local one (relative paths are taken from `root`). Credentials,
    port, query, a trailing `/` and `.git` are dropped and the host is lower-cased; the path
    keeps its case.
    """
    url = url.strip()
    if not url or any(ord(c) < 32 for c in url):
        return None
    scheme_match = _SCHEME.match(url)
    if scheme_match is not None:
        scheme, rest = scheme_match.group(1).lower(), scheme_match.group(2)
        if scheme == "file":
            return _local(rest, root)
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2]
        host = host[: host.index("]") + 1] if host.startswith("[") and "]" in host else host
        host = host.split(":", 1)[0] if not host.startswith("[") else host
        path = re.split(r"[?#]", path, maxsplit=1)[0]
        return _joined(host, path)
    scp = _SCP.match(url)
    if scp is not None and not re.match(r"[A-Za-z]:[\\/]", url):  # not a Windows drive
        return _joined(scp.group(1), scp.group(2))
    return _local(url, root)


def _joined(host: str, path: str) -> str | None:
    host = host.strip().lower().rstrip(".")
    path = _tidy(path.lstrip("/"))
    if not host or not path:
        return None
    return f"{host}/{path}"


def _local(path: str, root: Path | None) -> str | None:
    if not path:
        return None
    where = Path(path)
    if not where.is_absolute():
        if root is None:
            return None
        where = root / where
    tidy = _tidy(os.path.normpath(where))
    return f"file:{tidy}" if tidy else None


def _tidy(path: str) -> str:
    """A repository path without duplicate or trailing slashes and without `.git`."""
    path = re.sub(r"/{2,}", "/", path).rstrip("/")
    path = path.removesuffix(".git").rstrip("/")
    return path
