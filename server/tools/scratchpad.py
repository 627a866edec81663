"""Tools of the session scratchpad: write, read, promote."""

# No `from __future__ import annotations`: argument descriptions are built from settings at
# registration time, so annotations must be evaluated objects.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_core.domain.knowledge import PromotionTarget
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.knowledge import (
    EvictedOut,
    PromotionOut,
    ScratchpadDeleteOut,
    ScratchpadPromoteOut,
    ScratchpadReadOut,
    ScratchpadWriteOut,
    SnippetOut,
    Target,
)
from server.settings import Settings
from server.tools import container, tool
from server.toolsets import Toolset

__all__ = ["register"]

# Eviction at the cap is the scratchpad's contract (a bounded cache the client asked for),
# like the working layer's trim in `append`, so a write is not flagged destructive.
_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# A read moves snippets to the recently-used end: bookkeeping, like access tracking elsewhere.
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

ScratchpadSession = Annotated[
    str, Field(description="The session (flow) whose scratchpad this is.", max_length=128)
]


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register scratchpad_write, scratchpad_read, scratchpad_promote and scratchpad_delete."""
    cap = settings.knowledge.scratchpad_cap

    @tool(mcp, toolset=Toolset.SCRATCHPAD, title="Write a scratchpad snippet", annotations=_WRITE)
    async def scratchpad_write(
        session_id: ScratchpadSession,
        snippet: Annotated[str, Field(description="A short, reflective note in plain language.")],
        ctx: Context[AppContext],
        user: Annotated[
            str | None,
            Field(description="The user the note is about (lets it become a preference)."),
        ] = None,
        tenant: Annotated[
            str | None,
            Field(
                description="The tenant (business) it is about (lets it become business context)."
            ),
        ] = None,
        salient: Annotated[
            bool, Field(description="True if the note is surprising or important: promote it now.")
        ] = False,
        promote_to: Annotated[
            Target | None,
            Field(
                description="Where a promotion goes; default preferences if `user` is given, "
                "else business_context."
            ),
        ] = None,
    ) -> ScratchpadWriteOut:
        """Save a snippet to this session's scratchpad (kept in context for the session).

        Write at the end of a flow what is worth keeping: a correction, a preference, a fact
        about the business. The scratchpad holds `cap` snippets per session (64 by default);
        beyond that the least recently used one is evicted (listed in `evicted`). Writing the
        same text again refreshes it.

        Promotion copies a snippet to the user's preferences or the tenant's business
        context: at once when `salient` is true, or automatically when the same note (or a
        near-duplicate) has been written in several different sessions (3 by default).
        `promotion` in the result says where it went; once promoted, evicting it loses nothing.
        """
        app = container(ctx)
        result = await app.knowledge.scratchpad.write(
            session_id,
            snippet,
            user=user,
            tenant=tenant,
            salient=salient,
            promote_to=PromotionTarget(promote_to) if promote_to else None,
        )
        return ScratchpadWriteOut(
            session_id=result.snippet.session_id,
            status="created" if result.created else "refreshed",
            snippet=SnippetOut.of(result.snippet, result.promotion),
            evicted=[
                EvictedOut(
                    id=e.id,
                    snippet=e.text,
                    promoted_to=e.promoted_to.value if e.promoted_to else None,
                    promoted_ref=e.promoted_ref,
                )
                for e in result.evicted
            ],
            occurrences=result.occurrences,
            promotion=PromotionOut.of(result.promotion) if result.promotion else None,
            cap=cap,
            notes=result.notes,
            redacted=result.redacted,
        )

    @tool(mcp, toolset=Toolset.SCRATCHPAD, title="Read the scratchpad", annotations=_READ)
    async def scratchpad_read(
        session_id: ScratchpadSession,
        ctx: Context[AppContext],
        ids: Annotated[
            list[int] | None,
            Field(description="Only these snippets (they become the last to be evicted)."),
        ] = None,
    ) -> ScratchpadReadOut:
        """Read a session's scratchpad snippets, most recently used first.

        A direct lookup (no search): use it at the start of a flow to bring the session's
        notes into context. Reading counts as use, so read snippets are evicted last.
        """
        app = container(ctx)
        snippets = await app.knowledge.scratchpad.read(session_id, ids)
        return ScratchpadReadOut(
            session_id=session_id,
            count=len(snippets),
            cap=cap,
            snippets=[SnippetOut.of(s) for s in snippets],
        )

    @tool(mcp, toolset=Toolset.SCRATCHPAD, title="Promote a scratchpad snippet", annotations=_WRITE)
    async def scratchpad_promote(
        session_id: ScratchpadSession,
        id: Annotated[int, Field(description="The snippet's id (from scratchpad_read).")],
        target: Annotated[Target, Field(description="preferences or business_context.")],
        ctx: Context[AppContext],
        user: Annotated[
            str | None, Field(description="The user to give it to; default: the snippet's user.")
        ] = None,
        tenant: Annotated[
            str | None,
            Field(description="The tenant to give it to; default: the snippet's tenant."),
        ] = None,
        key: Annotated[
            str | None,
            Field(description="Preference key to store it under (default scratchpad/<hash>)."),
        ] = None,
    ) -> ScratchpadPromoteOut:
        """Promote a snippet to a user's preferences or a tenant's business context now.

        Use when the user says to remember something for good. The snippet records where it
        went. Promoting it again to the same place changes nothing.
        """
        app = container(ctx)
        promotion = await app.knowledge.scratchpad.promote(
            session_id, id, PromotionTarget(target), user=user, tenant=tenant, key=key
        )
        return ScratchpadPromoteOut(
            session_id=session_id, id=id, promotion=PromotionOut.of(promotion)
        )

    @tool(mcp, toolset=Toolset.SCRATCHPAD, title="Delete scratchpad snippets", annotations=_DESTROY)
    async def scratchpad_delete(
        ctx: Context[AppContext],
        session_id: Annotated[
            str | None, Field(description="The session whose snippets to delete.", max_length=128)
        ] = None,
        ids: Annotated[
            list[int] | None,
            Field(description="Only these snippets of the session.", max_length=1000),
        ] = None,
        user: Annotated[
            str | None, Field(description="Instead of a session: every snippet of this user.")
        ] = None,
        confirm: Annotated[
            bool, Field(description="Needed to delete a whole session or all of a user's.")
        ] = False,
    ) -> ScratchpadDeleteOut:
        """Permanently delete scratchpad snippets.

        Some `ids` of a session; a whole session; or (`user`) a user's snippets in every
        session. The last two need confirm=true.

        Details:
        Copies already promoted to preferences or business context stay: remove them with
        `preferences_delete` or `delete_documents`.
        """
        app = container(ctx)
        deleted = await app.knowledge.scratchpad.delete(session_id, ids, user=user, confirm=confirm)
        return ScratchpadDeleteOut(
            session_id=session_id,
            user=user,
            deleted=len(deleted),
            ids=deleted,
            not_found=[i for i in ids or [] if i not in deleted],
        )
