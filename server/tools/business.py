"""Tools of business context (per tenant): ingest, search, seed from and export to agent.md."""

from collections import Counter
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_core.domain.match import Match
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.knowledge import (
    BusinessHitOut,
    BusinessSearchOut,
    DocumentDeleteOut,
    DocumentListOut,
    DocumentOut,
    ExportOut,
    IngestOut,
    SeedOut,
    SharedPatternOut,
    SharingOut,
)
from server.settings import Settings
from server.tools import container, tool
from server.toolsets import Toolset

__all__ = ["register"]

# Re-ingesting a source replaces its previous version, as `learn` replaces a fact's value: an
# update the client asked for, not a deletion, so it is not flagged destructive.
_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Opting out deletes only what was derived from the tenant's documents for sharing (its
# documents stay), and the same call again changes nothing.
_SHARE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Tenant = Annotated[
    str, Field(description="The tenant (organisation) whose business context this is.")
]


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register the document tools: ingest, search, list, delete, agent.md, sharing."""
    results = settings.knowledge.results
    # The limits a long text meets: the service's, and over HTTP the request body's (a larger
    # request is refused before any tool runs), so a model splits the text before sending it.
    sizes = (
        f"up to {settings.knowledge.max_document_chars:,} characters; over HTTP, "
        f"{settings.http_max_body_bytes:,} bytes per request"
    )

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="Ingest a business document", annotations=_WRITE)
    async def ingest_document(
        tenant: Tenant,
        source: Annotated[
            str, Field(description="The document's name (path, URL or title), unique per tenant.")
        ],
        text: Annotated[
            str, Field(description=f"The whole document, plain text or markdown ({sizes}).")
        ],
        ctx: Context[AppContext],
    ) -> IngestOut:
        """Add a document to a tenant's business context, split into searchable chunks.

        Sending the same source with the same text again does nothing (status "unchanged");
        with new text it replaces the old version (status "replaced"). Large documents report
        progress while they are embedded. Find chunks with `search_business_context`. Send a
        text over the limits under `text` in parts (sources such as `handbook.md#2`).
        """
        app = container(ctx)

        async def progress(done: int, total: int) -> None:
            await ctx.report_progress(done, total, "embedding chunks")

        result = await app.knowledge.business.ingest(tenant, source, text, progress=progress)
        return IngestOut.of(result)

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="Search business context", annotations=_READ)
    async def search_business_context(
        tenant: Tenant,
        query: Annotated[str, Field(description="A question or topic, in plain words.")],
        ctx: Context[AppContext],
        limit: Annotated[
            int, Field(ge=1, le=100, description=f"Most chunks to return (default {results}).")
        ] = results,
        include_shared: Annotated[
            bool,
            Field(
                description="Also return anonymised industry patterns other tenants share "
                "(under `shared`, labelled, never naming them)."
            ),
        ] = False,
        min_match: Annotated[
            Literal["strong", "partial", "weak"],
            Field(description="Leave out chunks that match more weakly (weak: keep all)."),
        ] = "partial",
    ) -> BusinessSearchOut:
        """Search a tenant's documents by meaning and words; each hit names its source.

        Each chunk is marked strong, partial or weak (as memory `search` hits are); weak ones
        are left out unless min_match="weak", so "nothing matched" means no document is about
        the query. Quote `source` when you use a hit.

        Details:
        About 100 keyword and vector candidates are fused and then spread across documents
        (a few chunks per document at most while others match), so the answer covers more
        than one long document. The match strength is absolute, from a chunk's cosine
        similarity to the query and the share of the query's words it holds, on memory
        search's bands (strong from cosine 0.5 or every word, partial from 0.35 or half).
        With include_shared=true, up to 3 shared patterns that match the query come under
        `shared`, each marked `"shared": true`: sentences at least k (default 3) opted-in
        tenants hold, with names, identifiers and secrets replaced by [name], [email], [url],
        [id] or [number]. They are industry tendencies, not this tenant's documents.
        """
        app = container(ctx)
        found = await app.knowledge.business.search(
            tenant, query, limit=limit, include_shared=include_shared, min_match=Match(min_match)
        )
        return BusinessSearchOut(
            tenant=tenant,
            mode=found.mode,
            count=len(found.hits),
            candidates=found.candidates,
            weaker=found.dropped,
            hits=[BusinessHitOut.of(h) for h in found.hits],
            notes=found.notes,
            shared=[
                SharedPatternOut.of(h, m)
                for h, m in zip(found.shared, found.shared_match, strict=True)
            ],
        )

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="Share anonymised patterns", annotations=_SHARE)
    async def share_business_patterns(
        tenant: Tenant,
        share: Annotated[
            bool,
            Field(
                description="true: contribute anonymised patterns; false: stop, and remove "
                "everything this tenant contributed at once."
            ),
        ],
        ctx: Context[AppContext],
    ) -> SharingOut:
        """Opt a tenant in to (or out of) sharing anonymised patterns with other tenants.

        A sentence of its documents is shared only when at least k opted-in tenants hold it,
        with names, identifiers and secrets taken out. Off by default for every tenant.

        Details:
        Opting in takes effect at the next pattern refresh (the daily maintenance job or
        `memstrata patterns refresh`). Opting out removes the tenant's sentences and every
        shared pattern it holds at once. Documents of a tenant that did not opt in are never
        read for sharing, and never counted toward k.
        """
        app = container(ctx)
        shared = app.knowledge.business.shared
        change = await (shared.opt_in(tenant) if share else shared.opt_out(tenant))
        status = await shared.status(tenant)
        return SharingOut.of(change, status, settings.knowledge.shared_min_tenants)

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="Seed a tenant from agent.md", annotations=_WRITE)
    async def seed_tenant_from_agent_md(
        tenant: Tenant,
        text: Annotated[
            str, Field(description=f"The agent.md file's content, markdown ({sizes}).")
        ],
        ctx: Context[AppContext],
    ) -> SeedOut:
        """Give a new tenant its starting business context from an agent.md file.

        Each `#`/`##` section becomes a document `agent.md#<heading>`. Uploading the file
        again changes only the sections that changed.
        """
        app = container(ctx)

        async def progress(done: int, total: int) -> None:
            await ctx.report_progress(done, total, "ingesting sections")

        done = await app.knowledge.business.seed_from_agent_md(tenant, text, progress=progress)
        sections = [IngestOut.of(r) for r in done]
        return SeedOut(
            tenant=tenant,
            created=sum(s.status == "created" for s in sections),
            replaced=sum(s.status == "replaced" for s in sections),
            unchanged=sum(s.status == "unchanged" for s in sections),
            sections=sections,
            redacted=dict(sum((Counter(s.redacted) for s in sections), Counter())),
        )

    @tool(
        mcp,
        toolset=Toolset.DOCUMENTS,
        title="Export business context as agent.md",
        annotations=_READ,
    )
    async def export_agent_md(tenant: Tenant, ctx: Context[AppContext]) -> ExportOut:
        """Write a tenant's agent.md sections and everything promoted since as one agent.md.

        Promoted scratchpad snippets appear under "## Learned". Uploading the text with
        `seed_tenant_from_agent_md` recreates the context in another tenant or store.
        """
        app = container(ctx)
        text, seeded, learned = await app.knowledge.business.export_agent_md(tenant)
        return ExportOut(tenant=tenant, seeded_sections=seeded, learned_items=learned, text=text)

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="List business documents", annotations=_READ)
    async def list_documents(tenant: Tenant, ctx: Context[AppContext]) -> DocumentListOut:
        """List a tenant's documents (source, origin, size), oldest first, without their text."""
        app = container(ctx)
        docs = await app.knowledge.business.list_documents(tenant)
        return DocumentListOut(
            tenant=tenant, count=len(docs), documents=[DocumentOut.of(d) for d in docs]
        )

    @tool(mcp, toolset=Toolset.DOCUMENTS, title="Delete business documents", annotations=_DESTROY)
    async def delete_documents(
        tenant: Tenant,
        ctx: Context[AppContext],
        sources: Annotated[
            list[str] | None,
            Field(description="Documents to delete, by exact source.", max_length=1000),
        ] = None,
        confirm: Annotated[
            bool, Field(description="Needed to delete ALL of the tenant's documents.")
        ] = False,
    ) -> DocumentDeleteOut:
        """Permanently delete a tenant's documents (with their chunks) by source.

        Without `sources`, deletes every document of the tenant: only with confirm=true.
        """
        app = container(ctx)
        deleted = await app.knowledge.business.delete_documents(tenant, sources, confirm=confirm)
        return DocumentDeleteOut(
            tenant=tenant,
            deleted=deleted,
            not_found=[s for s in sources or [] if s not in deleted],
        )
