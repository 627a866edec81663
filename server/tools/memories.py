"""Tools that write, find and remove memories."""

# No `from __future__ import annotations`: the argument limits below come from settings at
# registration time, so the annotations must be evaluated objects, not strings.
from datetime import datetime
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field, JsonValue

from memory_core.domain.match import Match
from memory_core.domain.models import Layer, SearchMode
from memory_core.services.memories import MAX_QUERIES, AppendItem, SearchRequest
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.memories import (
    AppendItemIn,
    AppendManyOut,
    AppendOut,
    CandidateOut,
    ClearOut,
    CompactOut,
    ContextOut,
    ForgetOut,
    LayerName,
    LearnOut,
    RecallOut,
    SearchOut,
)
from server.settings import Settings
from server.tools import Project, container, tool
from server.tools.progress import progress_reporter
from server.toolsets import Toolset

__all__ = ["register"]

TokenBudget = Annotated[
    int | None,
    Field(ge=1, le=10**9, description="Cut the answer to about this many tokens of memory text."),
]
MetadataIn = Annotated[
    dict[str, JsonValue] | None, Field(description="Optional JSON object stored with the memory.")
]
Author = Annotated[
    str | None,
    Field(description="Who said or wrote it: the user's name, 'assistant', a tool's name."),
]

# Items one append_many call may carry (the service allows more; a tool call stays small).
APPEND_MANY_MAX = 100

_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Reads record the access (last_accessed, access_count, tier) the way a file system records
# atime: bookkeeping the client never sees as a change, so reads stay read-only for clients
# that auto-approve read-only tools.
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def register(mcp: MemstrataServer, settings: Settings) -> None:  # noqa: C901 - one closure per tool
    """Register append, append_many, search, learn, recall, load_context, compact, clear, forget."""
    max_limit = settings.limits.max_limit
    Limit = Annotated[
        int, Field(ge=1, le=max_limit, description=f"How many results, 1-{max_limit}.")
    ]
    working_cap = settings.limits.working_cap

    @tool(mcp, toolset=Toolset.CORE, title="Append a memory", annotations=_WRITE)
    async def append(
        layer: Annotated[
            LayerName,
            Field(
                description=(
                    f"working: short-lived scratch (newest {working_cap} per session kept); "
                    "episodic: what happened; semantic: a fact under `key`; "
                    "procedural: a rule, `key` = condition, `content` = action."
                )
            ),
        ],
        content: Annotated[str, Field(description="The text to remember.")],
        ctx: Context[AppContext],
        metadata: MetadataIn = None,
        key: Annotated[
            str | None,
            Field(
                description=(
                    "Required for semantic (the fact's name) and procedural (the condition)."
                )
            ),
        ] = None,
        session_id: Annotated[str | None, Field(description="Conversation/session scope.")] = None,
        author: Author = None,
        project: Project = None,
        supersedes: Annotated[
            list[int] | None,
            Field(max_length=100, description="Ids of memories this one replaces (then hidden)."),
        ] = None,
        tags: Annotated[list[str] | None, Field(max_length=20, description="Labels.")] = None,
    ) -> AppendOut:
        """Store a memory. Appending identical text again returns the existing id.

        Use semantic for durable facts (upserted by key), procedural for "when X, do Y" rules,
        episodic for events worth remembering, working for scratch notes of this session.

        Details:
        A result with `similar_to` means a very similar memory already exists in this layer
        (the text answer says "similar to #id"). Credentials (API keys, private keys, tokens,
        passwords in URLs) are stored as [REDACTED:<kind>]; `redacted` counts them.
        """
        app = container(ctx)
        result = await app.memories.append(
            app.project(project),
            Layer(layer),
            content,
            key=key,
            metadata=metadata,
            session_id=session_id,
            author=author,
            supersedes=supersedes,
            tags=tags,
        )
        m = result.outcome.memory
        near = result.near_duplicate
        return AppendOut(
            similar_to=near.id if near else None,
            similarity=near.similarity if near else None,
            id=m.id,
            project=m.project,
            layer=m.layer,
            status=result.outcome.status,
            key=m.key,
            previous_content=result.outcome.previous_content,
            trimmed=result.trimmed,
            redacted=result.redacted,
            new_project=result.new_project and project is not None,
            candidates=[CandidateOut.of(c) for c in result.candidates],
        )

    @tool(mcp, toolset=Toolset.BULK, title="Append several memories", annotations=_WRITE)
    async def append_many(
        items: Annotated[
            list[AppendItemIn],
            Field(
                min_length=1,
                max_length=APPEND_MANY_MAX,
                description=f"1-{APPEND_MANY_MAX} memories, each as `append` takes them.",
            ),
        ],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> AppendManyOut:
        """Store several memories at once: all of them, or none if any item is invalid.

        Each item is stored as `append` would store it (duplicates return the existing id,
        semantic items upsert by key, credentials are redacted). Faster than many `append`
        calls for imports; it does not report near-duplicates (`similar_to`).
        """
        app = container(ctx)
        name = app.project(project)
        results = await app.memories.append_many(
            name,
            [
                AppendItem(
                    layer=Layer(i.layer),
                    content=i.content,
                    key=i.key,
                    metadata=i.metadata,
                    session_id=i.session_id,
                    author=i.author,
                    occurred_at=i.occurred_at,
                    tags=tuple(i.tags or ()),
                    supersedes=tuple(i.supersedes or ()),
                )
                for i in items
            ],
        )
        return AppendManyOut(
            project=name,
            new_project=any(r.new_project for r in results) and project is not None,
            created=sum(r.status == "created" for r in results),
            results=[
                AppendOut(
                    id=r.memory.id,
                    project=r.memory.project,
                    layer=r.memory.layer,
                    status=r.status,
                    key=r.memory.key,
                    previous_content=r.previous_content,
                    trimmed=r.trimmed,
                    redacted=r.redacted,
                )
                for r in results
            ],
        )

    @tool(mcp, toolset=Toolset.CORE, title="Search memories", annotations=_READ)
    async def search(
        ctx: Context[AppContext],
        query: Annotated[
            str | None, Field(description="What to look for, in plain words or a question.")
        ] = None,
        queries: Annotated[
            list[str] | None,
            Field(
                max_length=MAX_QUERIES,
                description=f"1-{MAX_QUERIES} rephrasings or sub-questions, searched together "
                "(for a question with several parts or names).",
            ),
        ] = None,
        mode: Annotated[
            Literal["hybrid", "keyword", "semantic"],
            Field(
                description="hybrid: meaning and words (best); keyword: words only; "
                "semantic: meaning only."
            ),
        ] = "hybrid",
        layer: Annotated[LayerName | None, Field(description="Only this layer.")] = None,
        limit: Limit = 10,
        token_budget: TokenBudget = None,
        since: Annotated[
            datetime | None,
            Field(
                description=(
                    "Only memories created at or after this ISO-8601 time (UTC if no zone)."
                )
            ),
        ] = None,
        until: Annotated[
            datetime | None, Field(description=("Only memories created before this ISO-8601 time."))
        ] = None,
        session_id: Annotated[str | None, Field(description="Only this session.")] = None,
        author: Annotated[str | None, Field(description="Only memories by this author.")] = None,
        min_match: Annotated[
            Literal["strong", "partial"] | None,
            Field(description="Leave out hits that match more weakly than this."),
        ] = None,
        explain: Annotated[
            bool, Field(description="Also show why each hit ranked (ranks, boosts, scores).")
        ] = False,
        project: Project = None,
        tags: Annotated[list[str] | None, Field(max_length=20, description="All of these.")] = None,
        include_superseded: Annotated[bool, Field(description="Also replaced memories.")] = False,
    ) -> SearchOut:
        """Find memories by meaning and by words, best first. Search before answering from memory.

        Results are ranked, not paged: if the answer is not among them, rephrase the query or
        filter by `layer`, `session_id` or time rather than asking for more.

        Details:
        Combines keyword (BM25) and embedding-similarity evidence, then favours recently used
        memories. Each hit's text line shows its id, layer, tier, its match strength (strong,
        partial or weak: absolute, from the cosine similarity and the share of the query's
        words it holds, so a weak best hit means nothing relevant was found), when it was
        written (or said, for a memory given `occurred_at`) and `when=` the dates its text
        mentions, resolved ("yesterday" said on 8 May 2023 is 2023-05-07). A query naming a
        time ("in May 2023", "last summer") lifts memories with matching dates; one asking
        "when" lifts memories that say when something happened. `explain=true` adds the
        signals behind its rank (and each hit's tier, score and times to `structuredContent`).
        """
        app = container(ctx)
        result = await app.memories.search(
            SearchRequest(
                project=app.project(project),
                query=query,
                queries=tuple(queries or ()),
                mode=SearchMode(mode),
                layer=Layer(layer) if layer else None,
                session_id=session_id,
                author=author,
                since=since,
                until=until,
                limit=limit,
                token_budget=token_budget,
                min_match=Match(min_match) if min_match else None,
                tags=tuple(tags or ()),
                include_superseded=include_superseded,
            )
        )
        shown = " | ".join(([query] if query is not None else []) + (queries or []))
        return SearchOut.of(shown, result, explain=explain)

    @tool(mcp, toolset=Toolset.CORE, title="Learn a fact", annotations=_WRITE)
    async def learn(
        key: Annotated[str, Field(description="The fact's name, e.g. 'user.preferred_language'.")],
        value: Annotated[str, Field(description="What is true about it.")],
        ctx: Context[AppContext],
        metadata: MetadataIn = None,
        project: Project = None,
    ) -> LearnOut:
        """Store semantic knowledge under a key, replacing any previous value of that key."""
        app = container(ctx)
        outcome = await app.memories.learn(app.project(project), key, value, metadata=metadata)
        return LearnOut(
            id=outcome.memory.id,
            key=outcome.memory.key or key,
            status=outcome.status,
            previous_value=outcome.previous_content,
            redacted=outcome.redacted,
            project=outcome.memory.project,
            new_project=outcome.new_project and project is not None,
        )

    @tool(mcp, toolset=Toolset.CORE, title="Recall a fact", annotations=_READ)
    async def recall(
        key: Annotated[str, Field(description="The exact key given to `learn`, or a situation.")],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> RecallOut:
        """Read the fact stored under a key, plus procedural rules whose condition matches it.

        A missing key is not an error: `found` is false and `suggestions` lists close keys.
        """
        app = container(ctx)
        result = await app.memories.recall(app.project(project), key)
        return RecallOut.of(result)

    @tool(mcp, toolset=Toolset.CORE, title="Load recent context", annotations=_READ)
    async def load_context(
        ctx: Context[AppContext],
        limit: Limit = 10,
        layer: Annotated[LayerName | None, Field(description="Only this layer.")] = None,
        token_budget: TokenBudget = None,
        project: Project = None,
        include_superseded: Annotated[bool, Field(description="Also replaced memories.")] = False,
    ) -> ContextOut:
        """Start of a task: the project's briefing (its rules, recent memories, last session).

        With `layer`, the most recently used memories of that layer instead. Loading marks the
        memories as used, so there are no further pages: to see more, raise `limit`, pick a
        `layer`, or `search` for what you need.

        Details:
        Without `layer` the text answer is the same briefing Claude Code's SessionStart hook
        injects (procedural rules first, then memories by tier, the user's preferences when
        MEMSTRATA_HOOKS__USER_ID names the user, and the summary of the project's last recorded
        session): at most `limit` rules and memories, cut to `token_budget` (2,000 tokens by
        default), and those shown count as used. The `limit` most recently used memories
        (ACTIVE first, then RECENT, ARCHIVED, EXPIRED) are in `items` either way.
        """
        app = container(ctx)
        name = app.project(project)
        briefing = None
        result = await app.memories.load_context(
            name,
            layer=Layer(layer) if layer else None,
            limit=limit,
            token_budget=token_budget,
            include_superseded=include_superseded,
        )
        if layer is None:
            start = await app.start.build(
                name,
                user=app.settings.hooks.user_id,
                token_budget=token_budget or app.settings.hooks.start_tokens,
                limit=limit,
                hand_out_shown=True,
                handed_out={item.memory.id for item in result.items},
            )
            briefing = start.text or None
        return ContextOut.of(name, result, briefing=briefing)

    @tool(
        mcp,
        toolset=Toolset.MAINTENANCE,
        title="Compact a layer",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def compact(
        layer: Annotated[LayerName, Field(description="The layer to compact.")],
        ctx: Context[AppContext],
        keep_last: Annotated[
            int,
            Field(ge=0, le=10_000, description=("How many newest entries to keep as they are.")),
        ] = 10,
        summarize_older: Annotated[
            bool,
            Field(
                description=(
                    "Replace older working/episodic entries by one summary entry (else drop them)."
                )
            ),
        ] = True,
        session_id: Annotated[str | None, Field(description="Only this session.")] = None,
        project: Project = None,
    ) -> CompactOut:
        """Shrink a layer to its newest entries, summarising the older ones.

        semantic is never compacted (each key is current knowledge); procedural keeps its
        newest `keep_last` rules. Deletes the older entries (their summaries stay), so use it
        when a layer has grown long, not routinely. Reports progress if the client asks.
        """
        app = container(ctx)
        result = await app.memories.compact(
            app.project(project),
            Layer(layer),
            keep_last=keep_last,
            summarize_older=summarize_older,
            session_id=session_id,
            progress=progress_reporter(ctx, "compacted {done} of {total} steps"),
        )
        return CompactOut(
            layer=Layer(layer),
            removed=result.removed,
            kept=result.kept,
            summary_ids=[m.id for m in result.summaries],
        )

    @tool(mcp, toolset=Toolset.MAINTENANCE, title="Clear memories", annotations=_DESTROY)
    async def clear(
        ctx: Context[AppContext],
        confirm: Annotated[
            bool,
            Field(
                description=("Must be true: this permanently deletes memories. Ask the user first.")
            ),
        ] = False,
        layer: Annotated[
            LayerName | None,
            Field(description=("Only this layer; omit to clear every layer of the project.")),
        ] = None,
        project: Project = None,
    ) -> ClearOut:
        """Permanently delete every memory of a layer, or of the whole project."""
        app = container(ctx)
        name = app.project(project)
        deleted = await app.memories.clear(name, Layer(layer) if layer else None, confirm=confirm)
        return ClearOut(project=name, layer=Layer(layer) if layer else None, deleted=deleted)

    @tool(mcp, toolset=Toolset.CORE, title="Forget a memory", annotations=_DESTROY)
    async def forget(
        id: Annotated[
            int,
            Field(ge=1, le=2**63 - 1, description="The memory's id, as returned by other tools."),
        ],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> ForgetOut:
        """Permanently delete one memory by id (for example one that turned out wrong)."""
        app = container(ctx)
        memory = await app.memories.forget(app.project(project), id)
        return ForgetOut(id=memory.id, deleted=True, content=memory.content)
