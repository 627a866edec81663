"""Curation tools: update a memory (keeping history), see its history, pin, list, forget by filter.

The `curation` toolset: one truth per fact (issue 32). Corrections themselves go through
`append(..., supersedes=[ids])` in the core toolset.
"""

# No `from __future__ import annotations`: the argument limits below come from settings at
# registration time, so the annotations must be evaluated objects, not strings.
from datetime import datetime
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field, JsonValue

from memory_core.domain.models import BrowseQuery, Layer
from memory_core.services.truth import TruthService
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.memories import LayerName
from server.schemas.truth import (
    CuratedMemory,
    ForgetWhereOut,
    HistoryOut,
    ListMemoriesOut,
    PinOut,
    UpdateOut,
    VersionOut,
)
from server.settings import Settings
from server.tools import Project, container, tool
from server.toolsets import Toolset

__all__ = ["register"]

MemoryId = Annotated[
    int, Field(ge=1, le=2**63 - 1, description="The memory's id, as returned by other tools.")
]
Ids = Annotated[
    list[Annotated[int, Field(ge=1, le=2**63 - 1)]],
    Field(min_length=1, max_length=1000, description="Memory ids."),
]
Tags = Annotated[
    list[str] | None,
    Field(description="Only memories holding every one of these tags.", max_length=20),
]

_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def _truth(ctx: Context[AppContext]) -> TruthService:
    return TruthService(container(ctx).memories)


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register update, history, pin, unpin, list_memories and forget_where."""
    max_limit = settings.limits.max_limit

    @tool(mcp, toolset=Toolset.CURATION, title="Update a memory", annotations=_WRITE)
    async def update(
        id: MemoryId,
        ctx: Context[AppContext],
        content: Annotated[str | None, Field(description="The new text.")] = None,
        metadata: Annotated[
            dict[str, JsonValue] | None, Field(description="Replaces the metadata object.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Replaces the tags.")] = None,
        project: Project = None,
    ) -> UpdateOut:
        """Change a memory's content, metadata or tags in place; the old version is kept.

        For a fact that changed, prefer append(..., supersedes=[id]): both stay findable.
        """
        app = container(ctx)
        result = await _truth(ctx).update(
            app.project(project), id, content=content, metadata=metadata, tags=tags
        )
        if result.duplicate_of is not None:
            return UpdateOut(id=id, status="duplicate", duplicate_of=result.duplicate_of.id)
        assert result.memory is not None
        assert result.previous is not None
        return UpdateOut(
            id=id,
            status="updated" if result.changed else "unchanged",
            changed=result.changed,
            previous_content=result.previous.content if "content" in result.changed else None,
            memory=CuratedMemory.of(result.memory),
            redacted=result.redacted,
        )

    @tool(mcp, toolset=Toolset.CURATION, title="A memory's history", annotations=_READ)
    async def history(
        id: MemoryId, ctx: Context[AppContext], project: Project = None
    ) -> HistoryOut:
        """A memory as it is now and its earlier versions (updates, re-learned keys)."""
        app = container(ctx)
        name = app.project(project)
        memory = await app.memories.peek(name, id)
        versions = await _truth(ctx).history(name, id)
        return HistoryOut(
            memory=CuratedMemory.of(memory), versions=[VersionOut.of(v) for v in versions]
        )

    async def _pin(
        ctx: Context[AppContext], ids: list[int], project: str | None, on: bool
    ) -> PinOut:
        app = container(ctx)
        found = await _truth(ctx).pin(app.project(project), ids, pinned=on)
        done = [m.id for m in found]
        return PinOut(pinned=on, ids=done, missing=[i for i in ids if i not in done])

    @tool(mcp, toolset=Toolset.CURATION, title="Pin memories", annotations=_WRITE)
    async def pin(ids: Ids, ctx: Context[AppContext], project: Project = None) -> PinOut:
        """Keep memories for good: pinned ones never expire or get pruned."""
        return await _pin(ctx, ids, project, True)

    @tool(mcp, toolset=Toolset.CURATION, title="Unpin memories", annotations=_WRITE)
    async def unpin(ids: Ids, ctx: Context[AppContext], project: Project = None) -> PinOut:
        """Let pinned memories age (and be pruned) like the others again."""
        return await _pin(ctx, ids, project, False)

    def _query(
        project: str,
        layer: LayerName | None,
        tags: list[str] | None,
        author: str | None,
        since: datetime | None,
        until: datetime | None,
        pinned: bool | None,
        superseded: bool | None,
    ) -> BrowseQuery:
        return BrowseQuery(
            project=project,
            layer=Layer(layer) if layer else None,
            tags=tuple(tags or ()),
            author=author,
            since=since,
            until=until,
            pinned=pinned,
            superseded=superseded,
        )

    @tool(mcp, toolset=Toolset.CURATION, title="List memories", annotations=_READ)
    async def list_memories(
        ctx: Context[AppContext],
        layer: LayerName | None = None,
        tags: Tags = None,
        author: str | None = None,
        since: Annotated[datetime | None, Field(description="Created at or after.")] = None,
        until: Annotated[datetime | None, Field(description="Created before.")] = None,
        pinned: bool | None = None,
        include_superseded: Annotated[
            bool, Field(description="Also list memories a newer one replaced.")
        ] = False,
        before_id: Annotated[
            int | None, Field(ge=1, description="The `next_cursor` of the previous page.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=max_limit)] = 20,
        project: Project = None,
    ) -> ListMemoriesOut:
        """Browse memories newest first, by filter and page; nothing is marked as used."""
        app = container(ctx)
        query = _query(
            app.project(project),
            layer,
            tags,
            author,
            since,
            until,
            pinned,
            None if include_superseded else False,
        ).model_copy(update={"before_id": before_id, "limit": limit})
        page, cursor = await _truth(ctx).list_memories(query)
        return ListMemoriesOut(memories=[CuratedMemory.of(m) for m in page], next_cursor=cursor)

    @tool(mcp, toolset=Toolset.CURATION, title="Forget memories by filter", annotations=_DESTROY)
    async def forget_where(
        ctx: Context[AppContext],
        ids: Annotated[list[int] | None, Field(max_length=1000, description="Memory ids.")] = None,
        layer: LayerName | None = None,
        tags: Tags = None,
        author: str | None = None,
        since: Annotated[datetime | None, Field(description="Created at or after.")] = None,
        until: Annotated[datetime | None, Field(description="Created before.")] = None,
        superseded: Annotated[
            bool | None, Field(description="true: only memories a newer one replaced.")
        ] = None,
        dry_run: Annotated[
            bool, Field(description="Preview (count and sample) without deleting.")
        ] = True,
        project: Project = None,
    ) -> ForgetWhereOut:
        """Delete memories by ids and/or filter; preview first (dry_run), then a receipt."""
        app = container(ctx)
        query = _query(
            app.project(project), layer, tags, author, since, until, None, superseded
        ).model_copy(update={"ids": tuple(ids or ())})
        receipt = await _truth(ctx).forget(query, dry_run=dry_run)
        return ForgetWhereOut.of(receipt)
