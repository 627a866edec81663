"""The dashboard's curation (issue 32): history, supersession, pins, tags, the filtered forget.

A memory's earlier versions and the memories it replaced, pins, tag filters, and the filtered
forget with its preview and receipt, all through memory_core.services.truth as the `curation`
tools do. The filtered forget is two steps: a GET previews (the dry run: count and a sample),
and its confirmation POSTs the same filters with the ids the preview showed, so the delete
takes only memories the person saw counted that still match (one written or changed
meanwhile is left alone).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from memory_core.domain.inputs import MAX_IDS
from memory_core.domain.models import BrowseQuery, Layer, Memory
from memory_core.domain.tags import check_tags
from memory_core.domain.versions import ForgetReceipt, MemoryVersion
from memory_core.errors import InvalidInputError
from memory_core.services.truth import TruthService
from server.app_context import AppContext

__all__ = [
    "FORGET_FIELDS",
    "FORGET_SAMPLE",
    "ForgetFilter",
    "Supersession",
    "forget_filter",
    "forget_preview",
    "forget_run",
    "supersession",
    "tag_list",
]

# The form fields of the filtered forget, in the order the form shows them.
FORGET_FIELDS = ("layer", "tags", "author", "session", "since", "until", "superseded", "pinned")
FORGET_SAMPLE = 10  # memories the preview shows of those it would delete
_SPLIT = re.compile(r"[\s,]+")


def tag_list(text: str | None) -> tuple[str, ...]:
    """Tags typed in a form field (separated by commas or spaces), as stored.

    Raises:
        InvalidInputError: A tag breaks the tag rules (domain.tags), or more than 20.
    """
    return check_tags([t for t in _SPLIT.split(text or "") if t])


def _day(value: str, field: str) -> datetime | None:
    """A date field (YYYY-MM-DD, a browser's date input) as midnight UTC."""
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise InvalidInputError(field, "must be a date, YYYY-MM-DD") from None
    return day.replace(tzinfo=UTC)


def _choice(value: str, field: str, choices: Mapping[str, bool | None]) -> bool | None:
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise InvalidInputError(field, f"must be one of {allowed}")
    return choices[value]


# "keep" by default: a pin says "keep this", so the filtered forget leaves pinned memories
# alone unless the person asks for them.
_PINNED = {"keep": False, "any": None, "only": True}
_SUPERSEDED = {"": None, "only": True, "current": False}


@dataclass(frozen=True)
class ForgetFilter:
    """The filtered forget's form: the values as typed, and the query they make."""

    values: dict[str, str]
    query: BrowseQuery

    @property
    def given(self) -> bool:
        """Whether a filter narrows the selection.

        Leaving pinned memories out does not, alone: it would select every other memory of
        the project, which is `clear`'s job.
        """
        q = self.query
        narrowing = (q.layer, q.session_id, q.author, q.since, q.until, q.superseded)
        return bool(q.tags) or q.pinned is True or any(f is not None for f in narrowing)


def forget_filter(project: str, form: Mapping[str, str]) -> ForgetFilter:
    """The filtered forget's query from its form (GET parameters or a POSTed form).

    Raises:
        InvalidInputError: A field is malformed (the field is named).
    """
    values = {name: (form.get(name) or "").strip() for name in FORGET_FIELDS}
    values["pinned"] = values["pinned"] or "keep"
    layer = values["layer"]
    if layer and layer not in {v.value for v in Layer}:
        allowed = ", ".join(v.value for v in Layer)
        raise InvalidInputError("layer", f"must be one of {allowed}")
    query = BrowseQuery(
        project=project,
        layer=Layer(layer) if layer else None,
        tags=tag_list(values["tags"]),
        author=values["author"] or None,
        session_id=values["session"] or None,
        since=_day(values["since"], "since"),
        until=_day(values["until"], "until"),
        superseded=_choice(values["superseded"], "superseded", _SUPERSEDED),
        pinned=_choice(values["pinned"], "pinned", _PINNED),
    )
    return ForgetFilter(values=values, query=query)


async def forget_preview(app: AppContext, chosen: ForgetFilter) -> ForgetReceipt:
    """The dry run of a filtered forget: how many, which ids, and a sample (nothing deleted)."""
    truth = TruthService(app.container.memories)
    return await truth.forget(chosen.query, dry_run=True, sample=FORGET_SAMPLE)


async def forget_run(app: AppContext, chosen: ForgetFilter, ids: str) -> ForgetReceipt:
    """Delete the previewed memories (`ids`, comma separated) that still match the filter.

    Raises:
        InvalidInputError: No id, a malformed one, or more than MAX_IDS.
    """
    wanted = []
    for part in (p for p in ids.split(",") if p.strip()):
        if not part.strip().isdigit() or len(part.strip()) > 19:
            raise InvalidInputError("ids", "must be memory ids separated by commas")
        wanted.append(int(part))
    if not wanted:
        raise InvalidInputError("ids", "must name the memories the preview showed")
    if len(wanted) > MAX_IDS:
        raise InvalidInputError("ids", f"must hold at most {MAX_IDS} ids (narrow the filter)")
    truth = TruthService(app.container.memories)
    query = chosen.query.model_copy(update={"ids": tuple(wanted)})
    return await truth.forget(query, dry_run=False, sample=0)


@dataclass(frozen=True)
class Supersession:
    """A memory's place among versions: its earlier versions and the memories it replaced."""

    versions: list[MemoryVersion]  # newest first
    replaced: list[Memory]  # the memories it superseded ("supersedes #m"), newest first


async def supersession(app: AppContext, memory: Memory) -> Supersession:
    """The history and the replaced memories of `memory` (nothing is marked as used)."""
    truth = TruthService(app.container.memories)
    versions = await truth.history(memory.project, memory.id)
    replaced = await truth.replaced(memory.project, memory.id)
    return Supersession(versions=list(reversed(versions)), replaced=replaced)
