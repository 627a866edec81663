"""`memstrata setup claude-code|claude-desktop`: register memstrata in a client's settings files.

For people who do not use the Claude Code plugin. Each settings file is read, memstrata's
entries are merged in (server/cli/claude_settings.py), and the file is written back only when that
changed something: a timestamped backup first, then an atomic replace. Everything else in the
file stays as it was (keys, their order, other servers and hooks); the text is rewritten with the
file's own indentation (two spaces for a new or one-line file). A file that is not valid JSON
is refused and never overwritten.

The parser is built for every `memstrata` command, `serve` and `hook` included, so this module
imports nothing heavy at the top (rich loads only when setup runs).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from server.cli.claude_settings import (
    Document,
    SettingsShapeError,
    desktop_config_path,
    hook_groups,
    merge_hooks,
    merge_server,
    remove_hooks,
    remove_server,
    server_entry,
)
from server.settings import Settings

__all__ = [
    "Change",
    "SetupError",
    "add_parser",
    "apply_changes",
    "entry_env",
    "plan_claude_code",
    "plan_claude_desktop",
    "resolve_command",
    "run_command",
]

_EXAMPLES = """\
examples:
  memstrata setup claude-code                  # ~/.claude.json and ~/.claude/settings.json
  memstrata setup claude-code --dry-run        # show the diff, write nothing
  memstrata setup claude-code --scope project  # ./.mcp.json and ./.claude/settings.json
  memstrata setup claude-code --uninstall      # remove exactly memstrata's entries
  memstrata setup claude-desktop               # claude_desktop_config.json

exit codes:
  0    registered (or removed, or already as asked)
  1    a settings file is not valid JSON or has an unexpected shape (nothing was written),
       no memstrata executable was found, or a file could not be written
  2    usage error"""


class SetupError(Exception):
    """Why setup cannot go ahead; nothing has been written when it is raised."""


@dataclass(frozen=True)
class Change:
    """One settings file: its text before and after (None: there is no such file)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        """True when the file has to be written."""
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change, for --dry-run."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path),
        )
        return "".join(lines)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `setup` and its two targets on the `memstrata` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "setup",
        help="register the server and hooks in Claude Code / Claude Desktop settings",
        description=textwrap.fill(
            "Merge memstrata's MCP server entry (and, for Claude Code, its hooks) into the "
            "client's settings files, with absolute paths to this memstrata. Other servers, "
            "hooks and keys stay as they are; each changed file is backed up next to itself "
            "(NAME.memstrata-backup-TIMESTAMP). Running it again changes nothing; --uninstall "
            "removes exactly memstrata's entries. Claude Code users can install the plugin "
            "instead (see README, Claude Code).",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    targets = parser.add_subparsers(dest="target", required=True)
    code = targets.add_parser(
        "claude-code",
        help="the server and the four hooks, for Claude Code",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    code.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user: ~/.claude.json + ~/.claude/settings.json (default); "
        "project: ./.mcp.json + ./.claude/settings.json",
    )
    desktop = targets.add_parser(
        "claude-desktop",
        help="the server, for Claude Desktop (it has no hooks)",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for target in (code, desktop):
        target.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
        target.add_argument("--uninstall", action="store_true", help="remove memstrata's entries")
    return parser


def resolve_command(argv0: str, executable: str) -> list[str]:
    """The absolute command that runs this memstrata (the console script, not a symlink target).

    Symlinks are kept as they are: a pipx link in ~/.local/bin survives upgrades.
    """
    candidates = []
    if Path(argv0).name == "memstrata":
        candidates.append(shutil.which(argv0) or argv0)
    candidates.append(str(Path(executable).parent / "memstrata"))
    candidates.append(shutil.which("memstrata") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return [os.path.abspath(candidate)]
    raise SetupError(
        "cannot find the memstrata executable to register (looked at the running command, "
        f"next to {executable} and on PATH); install it (`make install`, `pipx install "
        "memstrata`) and run setup with that memstrata"
    )


def entry_env(environ: Mapping[str, str], *, git_scope: bool) -> dict[str, str]:
    """The environment the registered commands get: the project scope, and MEMSTRATA_DB if set.

    MEMSTRATA_DB is written as an absolute path when it is set while running setup, so the server
    and the hooks open the database this setup was run for.
    """
    env = {"MEMSTRATA_PROJECT_SCOPE": "git"} if git_scope else {}
    if environ.get("MEMSTRATA_DB"):
        env["MEMSTRATA_DB"] = str(Path(environ["MEMSTRATA_DB"]).expanduser().absolute())
    return env


def _indent_of(text: str | None) -> int | str:
    """The indentation the file already uses (its first indented line), else two spaces."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            prefix = line[: len(line) - len(stripped)]
            return prefix if "\t" in prefix else len(prefix)
    return 2


def _render(document: Document, like: str | None) -> str:
    return json.dumps(document, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _read(path: Path) -> tuple[str | None, Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}") from exc
    if not text.strip():
        return text, {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it or move it away, then run setup again. Nothing was changed."
        ) from exc
    if not isinstance(document, dict):
        raise SetupError(f"{path} does not hold a JSON object; nothing was changed.")
    return text, document


def _plan(path: Path, edit: Callable[[Document], Document]) -> Change:
    before, document = _read(path)
    try:
        updated = edit(document)
    except SettingsShapeError as exc:
        raise SetupError(f"{exc}; fix it, then run setup again. Nothing was changed.") from exc
    if updated == document:
        return Change(path, before, before)
    return Change(path, before, _render(updated, before))


def plan_claude_code(
    scope: str, home: Path, cwd: Path, command: list[str], env: dict[str, str], uninstall: bool
) -> list[Change]:
    """The changes to Claude Code's server file and hooks file for one scope."""
    if scope == "user":
        server_file, hooks_file = home / ".claude.json", home / ".claude" / "settings.json"
    else:
        server_file, hooks_file = cwd / ".mcp.json", cwd / ".claude" / "settings.json"
    if uninstall:
        return [
            _plan(server_file, lambda d: remove_server(d, str(server_file))),
            _plan(hooks_file, lambda d: remove_hooks(d, str(hooks_file))),
        ]
    entry = server_entry(command, env)
    groups = hook_groups(command, env)
    return [
        _plan(server_file, lambda d: merge_server(d, entry, str(server_file))),
        _plan(hooks_file, lambda d: merge_hooks(d, groups, str(hooks_file))),
    ]


def plan_claude_desktop(
    config: Path, command: list[str], env: dict[str, str], uninstall: bool
) -> list[Change]:
    """The change to claude_desktop_config.json."""
    if uninstall:
        return [_plan(config, lambda d: remove_server(d, str(config)))]
    entry = server_entry(command, env)
    return [_plan(config, lambda d: merge_server(d, entry, str(config)))]


def _backup_path(path: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.memstrata-backup-{stamp}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.memstrata-backup-{stamp}-{n}")
        n += 1
    return candidate


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if path.exists():
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o600)  # settings may hold tokens: private, as Claude Code keeps them
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_changes(changes: list[Change], now: datetime) -> list[tuple[Change, Path | None]]:
    """Back up and write each changed file; returns each written change and its backup."""
    written: list[tuple[Change, Path | None]] = []
    for change in changes:
        if not change.changed or change.after is None:
            continue
        backup = None
        if change.before is not None:
            backup = _backup_path(change.path, now)
            shutil.copy2(change.path, backup)
        _write_atomically(change.path, change.after)
        written.append((change, backup))
    return written


def _plan_for(args: argparse.Namespace) -> list[Change]:
    home = Path.home()
    env = os.environ
    if args.uninstall:
        command: list[str] = []
    else:
        command = resolve_command(sys.argv[0], sys.executable)
    if args.target == "claude-code":
        return plan_claude_code(
            args.scope,
            home,
            Path.cwd(),
            command,
            entry_env(env, git_scope=True),
            args.uninstall,
        )
    # Claude Desktop has no working directory of a project: its server keeps MEMSTRATA_PROJECT.
    config = desktop_config_path(home, sys.platform, env)
    return plan_claude_desktop(config, command, entry_env(env, git_scope=False), args.uninstall)


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """`memstrata setup ...`: plan every file first, then write (or print the diffs)."""
    from server.cli.output import Exit, err

    del settings  # the entries carry the environment setup runs in, not a resolved Settings
    try:
        changes = _plan_for(args)
    except SetupError as exc:
        err(f"memstrata setup: {exc}")
        return Exit.ERROR
    what = "removed from" if args.uninstall else "registered in"
    if args.dry_run:
        for change in changes:
            if change.changed:
                sys.stdout.write(change.diff())
            else:
                sys.stdout.write(f"unchanged: {change.path}\n")
        return Exit.OK
    try:
        written = apply_changes(changes, datetime.now(UTC))
    except OSError as exc:
        err(f"memstrata setup: cannot write {exc.filename}: {exc.strerror}")
        return Exit.ERROR
    done = {change.path for change, _ in written}
    for change, backup in written:
        kept = f" (backup: {backup})" if backup else " (created)"
        sys.stdout.write(f"memstrata {what} {change.path}{kept}\n")
    for change in changes:
        if change.path not in done:
            sys.stdout.write(f"unchanged: {change.path}\n")
    if written:
        client = "Claude Code" if args.target == "claude-code" else "Claude Desktop"
        sys.stdout.write(f"restart {client} to apply.\n")
    return Exit.OK
