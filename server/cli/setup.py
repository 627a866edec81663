"""`memstrata setup claude-code|claude-desktop`: register memstrata in a client's settings files.

For people who do not use the Claude Code plugin. Each settings file is read
(server/cli/settings_file.py: what cannot be read back exactly is refused, never overwritten),
memstrata's entries, and only the entries exactly as setup writes them, are merged in or taken
out (server/cli/claude_settings.py), and the files are written back only when that changed
something: all of them or none, each through a temporary file and an atomic rename after a
timestamped backup (beside the file; for project scope outside the repository). A symbolic
link is written through to its target. Everything else in a file stays as it was (keys, their
order, other servers and hooks); the text is rewritten with the file's own indentation (two
spaces for a new or one-line file).

The parser is built for every `memstrata` command, `serve` and `hook` included, so this module
imports nothing heavy at the top (rich loads only when setup runs).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from server.cli.claude_settings import (
    SERVER_NAME,
    Document,
    SettingsShapeError,
    desktop_config_path,
    foreign_server,
    hook_groups,
    merge_hooks,
    merge_server,
    remove_hooks,
    remove_server,
    server_entry,
)
from server.cli.settings_file import SettingsFileError, read_settings_file
from server.settings import Settings

__all__ = [
    "Applied",
    "Change",
    "SetupError",
    "add_parser",
    "apply_changes",
    "entry_env",
    "plan_claude_code",
    "plan_claude_desktop",
    "resolve_command",
    "run_command",
    "state_dir",
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
    """One settings file: its text before and after (None: there is no such file).

    link_target is where the bytes are when path is a symbolic link (the link itself is
    kept), backups the folder for its backup (None: next to the file), note a line for the
    person.
    """

    path: Path
    before: str | None
    after: str | None
    link_target: Path | None = None
    backups: Path | None = None
    note: str | None = None

    @property
    def target(self) -> Path:
        """The file written: path, or the file its symbolic link points to."""
        return self.link_target or self.path

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
            tofile=str(self.path) if self.after is not None else "/dev/null",
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
            "hooks and keys stay as they are; each changed file is backed up first "
            "(NAME.memstrata-backup-TIMESTAMP, next to it; for --scope project under "
            "$XDG_STATE_HOME/memstrata/setup-backups, outside the repository). All files are "
            "written or none. Running it again changes nothing; --uninstall removes exactly "
            "memstrata's entries, and the files setup created. Claude Code users can install "
            "the plugin instead (see README, Claude Code).",
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


def _render(document: Document, like: str | None, path: Path) -> str:
    text = json.dumps(document, indent=_indent_of(like), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SetupError(
            f"{path} holds a \\u escape of half a surrogate pair, which is not text and could "
            "not be written back; fix it, then run setup again. Nothing was changed."
        ) from None
    return text + "\n"


def _plan(
    path: Path,
    edit: Callable[[Document], Document],
    *,
    backups: Path | None = None,
    delete_if_empty: bool = False,
    note: Callable[[Document], str | None] | None = None,
) -> Change:
    """The change edit makes to the file at path.

    delete_if_empty: the file is one setup created, so when the edit leaves it `{}` it is
    deleted rather than left behind empty.
    """
    try:
        current = read_settings_file(path)
    except SettingsFileError as exc:
        raise SetupError(
            f"{exc}; fix it or move it away, then run setup again. Nothing was changed."
        ) from exc
    try:
        updated = edit(current.document)
    except SettingsShapeError as exc:
        raise SetupError(f"{exc}; fix it, then run setup again. Nothing was changed.") from exc
    told = note(current.document) if note else None
    if updated == current.document:
        after = current.text
    elif delete_if_empty and not updated:
        after = None
    else:
        after = _render(updated, current.text, path)
    return Change(path, current.text, after, link_target=current.target, backups=backups, note=told)


def _kept_foreign_server(path: Path) -> Callable[[Document], str | None]:
    def note(document: Document) -> str | None:
        runs = foreign_server(document)
        if runs is None:
            return None
        return f"kept: `mcpServers.{SERVER_NAME}` in {path} is not setup's (it {runs})"

    return note


def state_dir(home: Path, environ: Mapping[str, str]) -> Path:
    """The state directory: `$XDG_STATE_HOME/memstrata`, else `~/.local/state/memstrata`."""
    base = environ.get("XDG_STATE_HOME")
    return (Path(base) if base else home / ".local" / "state") / "memstrata"


def _project_backups(state: Path, project: Path) -> Path:
    """Where backups of a project's files go: outside the repository, one folder per project."""
    import hashlib  # here: the parser, built for `serve` too, imports this module

    digest = hashlib.sha256(str(project).encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return state / "setup-backups" / f"{project.name or 'root'}-{digest}"


def plan_claude_code(
    scope: str,
    home: Path,
    cwd: Path,
    command: list[str],
    env: dict[str, str],
    uninstall: bool,
    *,
    state: Path | None = None,
    created: Collection[str] = (),
) -> list[Change]:
    """The changes to Claude Code's server file and hooks file for one scope.

    Backups of project-scope files go under state (not into the repository); on uninstall a
    file named in created (setup made it) that is left `{}` is deleted.
    """
    if scope == "user":
        server_file, hooks_file = home / ".claude.json", home / ".claude" / "settings.json"
    else:
        server_file, hooks_file = cwd / ".mcp.json", cwd / ".claude" / "settings.json"

    def backups(path: Path) -> Path | None:
        if scope == "user" or state is None:
            return None
        return _project_backups(state, cwd) / path.parent.relative_to(cwd)

    if uninstall:
        return [
            _plan(
                server_file,
                lambda d: remove_server(d, str(server_file)),
                backups=backups(server_file),
                delete_if_empty=str(server_file) in created,
                note=_kept_foreign_server(server_file),
            ),
            _plan(
                hooks_file,
                lambda d: remove_hooks(d, str(hooks_file)),
                backups=backups(hooks_file),
                delete_if_empty=str(hooks_file) in created,
            ),
        ]
    # The server is told the hooks are there: its instructions then leave out what they do.
    entry = server_entry(command, {**env, "MEMSTRATA_CLIENT": "claude-code-hooks"})
    groups = hook_groups(command, env)
    return [
        _plan(
            server_file,
            lambda d: merge_server(d, entry, str(server_file)),
            backups=backups(server_file),
        ),
        _plan(
            hooks_file,
            lambda d: merge_hooks(d, groups, str(hooks_file)),
            backups=backups(hooks_file),
        ),
    ]


def plan_claude_desktop(
    config: Path,
    command: list[str],
    env: dict[str, str],
    uninstall: bool,
    *,
    created: Collection[str] = (),
) -> list[Change]:
    """The change to claude_desktop_config.json."""
    if uninstall:
        return [
            _plan(
                config,
                lambda d: remove_server(d, str(config)),
                delete_if_empty=str(config) in created,
                note=_kept_foreign_server(config),
            )
        ]
    entry = server_entry(command, env)
    return [_plan(config, lambda d: merge_server(d, entry, str(config)))]


def _backup_path(change: Change, now: datetime) -> Path:
    folder = change.backups or change.path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = folder / f"{change.path.name}.memstrata-backup-{stamp}"
    n = 1
    while candidate.exists():
        candidate = folder / f"{change.path.name}.memstrata-backup-{stamp}-{n}"
        n += 1
    return candidate


def _make_dirs(directory: Path) -> list[Path]:
    """Create directory and its missing parents; the ones created, outermost first."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def _stage(target: Path, text: str) -> Path:
    """A temporary file beside target holding text (target's mode, else 0600), to rename."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if target.exists():
            shutil.copymode(target, tmp)
        else:
            os.chmod(tmp, 0o600)  # settings may hold tokens: private, as Claude Code keeps them
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


@dataclass(frozen=True)
class Applied:
    """What apply_changes did: each changed file with its backup, and the directories it made."""

    written: list[tuple[Change, Path | None]]
    made_dirs: list[Path]


def _roll_back(
    done: list[tuple[Change, Path | None]], staged: list[Path], made_dirs: list[Path]
) -> list[str]:
    """Put back every file already changed; what could not be put back, with its backup."""
    for tmp in staged:
        tmp.unlink(missing_ok=True)
    left: list[str] = []
    for change, backup in reversed(done):
        try:
            if change.before is None:
                change.target.unlink(missing_ok=True)
            else:
                os.replace(_stage(change.target, change.before), change.target)
            if backup is not None:
                backup.unlink(missing_ok=True)
        except OSError:
            left.append(f"{change.path} (backup: {backup})" if backup else str(change.path))
    for directory in reversed(made_dirs):
        with contextlib.suppress(OSError):
            directory.rmdir()
    return left


def apply_changes(changes: list[Change], now: datetime) -> Applied:
    """Back up and write every changed file, or, when one cannot be written, none of them.

    Each new text is first written to a temporary file beside its target (a link's target: the
    link stays a link); only when all of them are there are the backups taken and the files
    renamed into place. A failure on the way puts back the files already replaced.
    """
    pending = [change for change in changes if change.changed]
    made_dirs: list[Path] = []
    staged: list[tuple[Change, Path | None]] = []
    done: list[tuple[Change, Path | None]] = []
    try:
        for change in pending:
            tmp = None
            if change.after is not None:
                made_dirs += _make_dirs(change.target.parent)
                tmp = _stage(change.target, change.after)
            staged.append((change, tmp))
        for change, tmp in staged:
            backup = None
            if change.before is not None:
                backup = _backup_path(change, now)
                shutil.copy2(change.target, backup)
            try:
                if tmp is None:
                    change.target.unlink()
                else:
                    os.replace(tmp, change.target)
            except BaseException:
                if backup is not None:  # the file is as it was: its backup is not needed
                    backup.unlink(missing_ok=True)
                raise
            done.append((change, backup))
    except BaseException as exc:
        left = _roll_back(done, [t for _, t in staged if t is not None], made_dirs)
        if left:
            raise SetupError(
                f"{_why(exc)}; could not put back {', '.join(left)}: restore from the backup"
            ) from exc
        raise
    return Applied(done, made_dirs)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot write {exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def _load_created(record: Path) -> set[str]:
    """The paths setup created and has not deleted again (a missing or bad record: none)."""
    try:
        value = read_settings_file(record).document.get("created", [])
    except SettingsFileError:
        return set()
    return {p for p in value if isinstance(p, str)} if isinstance(value, list) else set()


def _save_created(record: Path, created: set[str]) -> None:
    record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps({"created": sorted(created)}, indent=2) + "\n"
    os.replace(_stage(record, text), record)


def _remember(record: Path, created: set[str], applied: Applied) -> set[str]:
    """The record after applied: files and directories made added, those deleted taken out."""
    after = set(created) | {str(d) for d in applied.made_dirs}
    for change, _ in applied.written:
        if change.before is None:
            after.add(str(change.path))
        elif change.after is None:
            after.discard(str(change.path))
            parent = change.path.parent
            if str(parent) in after:
                with contextlib.suppress(OSError):  # not empty: something else lives there
                    parent.rmdir()
                    after.discard(str(parent))
    return after


def _plan_for(args: argparse.Namespace, state: Path, created: Collection[str]) -> list[Change]:
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
            state=state,
            created=created,
        )
    # Claude Desktop has no working directory of a project: its server keeps MEMSTRATA_PROJECT.
    config = desktop_config_path(home, sys.platform, env)
    return plan_claude_desktop(
        config, command, entry_env(env, git_scope=False), args.uninstall, created=created
    )


def _report(changes: list[Change], applied: Applied, uninstall: bool) -> None:
    what = "removed from" if uninstall else "registered in"
    done = {change.path for change, _ in applied.written}
    for change, backup in applied.written:
        if change.after is None:
            sys.stdout.write(f"memstrata {what} {change.path} (deleted: setup had created it)\n")
            continue
        kept = f" (backup: {backup})" if backup else " (created)"
        sys.stdout.write(f"memstrata {what} {change.path}{kept}\n")
    for change in changes:
        if change.path not in done:
            sys.stdout.write(f"unchanged: {change.path}\n")
    for change in changes:
        if change.note:
            sys.stdout.write(change.note + "\n")


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """`memstrata setup ...`: plan every file first, then write all of them or none."""
    from server.cli.output import Exit, err

    del settings  # the entries carry the environment setup runs in, not a resolved Settings
    state = state_dir(Path.home(), os.environ)
    record = state / "setup-created.json"
    created = _load_created(record)
    try:
        changes = _plan_for(args, state, created)
    except SetupError as exc:
        err(f"memstrata setup: {exc}")
        return Exit.ERROR
    if args.dry_run:
        for change in changes:
            sys.stdout.write(change.diff() if change.changed else f"unchanged: {change.path}\n")
        return Exit.OK
    try:
        applied = apply_changes(changes, datetime.now(UTC))
    except SetupError as exc:
        err(f"memstrata setup: {exc}")
        return Exit.ERROR
    except OSError as exc:
        err(f"memstrata setup: {_why(exc)}; nothing was changed")
        return Exit.ERROR
    remembered = _remember(record, created, applied)
    if remembered != created:
        try:
            _save_created(record, remembered)
        except OSError as exc:
            # The settings are written; only a later --uninstall will leave `{}` files behind.
            err(f"memstrata setup: cannot record the files it created in {record}: {exc}")
    _report(changes, applied, args.uninstall)
    if applied.written:
        client = "Claude Code" if args.target == "claude-code" else "Claude Desktop"
        sys.stdout.write(f"restart {client} to apply.\n")
    return Exit.OK
