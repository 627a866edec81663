"""`memstrata preferences|documents|scratchpad list|delete`: review and remove knowledge.

The same services as the MCP tools `preferences_list/delete`, `list_documents`,
`delete_documents` and `scratchpad_delete`, for a person at a terminal (a user's data removed
on request, a wrong promoted rule corrected) without an MCP client. `documents` also opts a
tenant in to or out of shared patterns (`share`, `unshare`, `sharing`, as the tool
`share_business_patterns`) and runs the pattern job (`refresh-patterns`).
"""

from __future__ import annotations

import argparse
import asyncio
import textwrap
from typing import Any

from server.cli.output import Exit, err, out_json, stdout_console
from server.settings import Settings

__all__ = ["COMMANDS", "add_parser", "run_command"]

COMMANDS = ("preferences", "documents", "scratchpad")

_EXAMPLES = {
    "preferences": "  memstrata preferences list --user ann\n"
    "  memstrata preferences delete --user ann --key units --playbook 12\n"
    "  memstrata preferences delete --user ann --all --yes",
    "documents": "  memstrata documents list --tenant acme --json\n"
    "  memstrata documents delete --tenant acme --source handbook.md\n"
    "  memstrata documents delete --tenant acme --all --yes\n"
    "  memstrata documents share --tenant acme      # contribute anonymised patterns\n"
    "  memstrata documents unshare --tenant acme    # stop; its contributions go at once\n"
    "  memstrata documents refresh-patterns         # the pattern job, now",
    "scratchpad": "  memstrata scratchpad list --session s1\n"
    "  memstrata scratchpad delete --session s1 --id 4 --id 5\n"
    "  memstrata scratchpad delete --user ann --yes",
}


def add_parser(subparsers: Any) -> None:
    """Register `preferences`, `documents` and `scratchpad` with list and delete actions."""
    for name, owner, what in (
        ("preferences", "--user", "a user's rules and playbooks"),
        ("documents", "--tenant", "a tenant's business documents"),
        ("scratchpad", "--session", "a session's scratchpad snippets"),
    ):
        parser = subparsers.add_parser(
            name,
            help=f"list or delete {what}",
            description=textwrap.fill(f"List or permanently delete {what}.", 88),
            epilog=f"examples:\n{_EXAMPLES[name]}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        actions = ["list", "delete"]
        if name == "documents":
            actions += ["share", "unshare", "sharing", "refresh-patterns"]
        parser.add_argument("action", choices=actions)
        # Only preferences always need their owner: scratchpad takes --session or --user,
        # and the pattern job (documents refresh-patterns) is about every opted-in tenant.
        parser.add_argument(owner, required=name == "preferences", help="whose")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")
        parser.add_argument("--yes", action="store_true", help="confirm a delete of everything")
        parser.add_argument("--all", action="store_true", help="delete everything of the owner")
        if name == "preferences":
            parser.add_argument("--key", action="append", help="a rule to delete (repeatable)")
            parser.add_argument("--playbook", action="append", type=int, help="a playbook id")
        elif name == "documents":
            parser.add_argument("--source", action="append", help="a document to delete")
        else:
            parser.add_argument("--user", help="delete: every snippet of this user instead")
            parser.add_argument("--id", action="append", type=int, help="a snippet to delete")


def _confirmed(args: argparse.Namespace, *named: object) -> bool | None:
    """True to delete everything, False to delete what is named, None: a usage error."""
    if args.all and any(named):
        return None
    if args.all:
        return True if args.yes else None
    return False if any(named) else None


async def _preferences(k: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    if args.action == "list":
        rules, playbooks = await k.preferences.list_all(args.user)
        return {
            "user": args.user,
            "rules": [{"key": p.key, "value": p.value, "origin": p.origin} for p in rules],
            "playbooks": [{"id": p.id, "flow": p.flow, "query": p.user_query} for p in playbooks],
        }
    every = _confirmed(args, args.key, args.playbook)
    if every is None:
        return None
    done = await k.preferences.delete(
        args.user,
        keys=None if every else (args.key or []),
        playbook_ids=None if every else (args.playbook or []),
        confirm=every,
    )
    return {"deleted_keys": done.keys, "deleted_playbook_ids": done.playbook_ids}


async def _sharing(k: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    shared = k.business.shared
    if args.action == "refresh-patterns":
        done = await shared.refresh()
        return {
            "documents_read": done.documents_read,
            "sentences_embedded": done.sentences_embedded,
            "documents_left": done.documents_left,
            "pool": done.pool,
            "published": done.published,
            "notes": done.notes,
        }
    if args.tenant is None:
        return None
    change = None
    if args.action == "share":
        change = await shared.opt_in(args.tenant)
    elif args.action == "unshare":
        change = await shared.opt_out(args.tenant)
    status = await shared.status(args.tenant)
    out: dict[str, Any] = {
        "tenant": args.tenant,
        "sharing": status.opted_in_at is not None,
        "since": None if status.opted_in_at is None else status.opted_in_at.isoformat(),
        "passages": status.passages,
    }
    if change is not None:
        out |= {
            "changed": change.changed,
            "passages_removed": change.passages_removed,
            "patterns_removed": change.patterns_removed,
        }
    return out


async def _documents(k: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    if args.action in {"share", "unshare", "sharing", "refresh-patterns"}:
        return await _sharing(k, args)
    if args.tenant is None:
        return None
    if args.action == "list":
        docs = await k.business.list_documents(args.tenant)
        return {
            "tenant": args.tenant,
            "documents": [
                {"source": d.source, "origin": d.origin.value, "chunks": d.chunk_count}
                for d in docs
            ],
        }
    every = _confirmed(args, args.source)
    if every is None:
        return None
    sources = None if every else args.source
    return {"deleted": await k.business.delete_documents(args.tenant, sources, confirm=every)}


async def _scratchpad(k: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    if args.action == "list":
        if args.session is None:
            return None
        snippets = await k.scratchpad.read(args.session)
        return {"snippets": [{"id": s.id, "snippet": s.text} for s in snippets]}
    whole = args.user is not None or args.all
    if (args.session is None) == (args.user is None) or (whole and not args.yes):
        return None
    if not whole and not args.id:
        return None
    ids = await k.scratchpad.delete(
        args.session, None if whole else args.id, user=args.user, confirm=whole
    )
    return {"deleted": ids}


_ACTIONS = {"preferences": _preferences, "documents": _documents, "scratchpad": _scratchpad}


async def _run(command: str, settings: Settings, args: argparse.Namespace) -> int:
    from server.container import open_container  # listing the command must stay light

    async with open_container(settings) as c:
        result = await _ACTIONS[command](c.knowledge, args)
    if result is None:
        return _usage(command)
    if args.json:
        out_json(result)
    else:
        stdout_console().print_json(data=result)
    return Exit.OK


def _usage(command: str) -> int:
    err(
        f"memstrata {command} delete: name what to delete, or pass --all --yes to delete "
        "everything of the owner"
        + (" (scratchpad: --session, or --user with --yes)" if command == "scratchpad" else "")
        + ("; list, share, unshare and sharing need --tenant" if command == "documents" else "")
    )
    return Exit.USAGE


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """Run `memstrata preferences|documents|scratchpad ACTION`."""
    return asyncio.run(_run(args.command, settings, args))
