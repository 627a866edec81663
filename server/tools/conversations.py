"""Tools for conversation memory: sessions, entries, summaries, Q&A cycles, the result cache."""

# No `from __future__ import annotations`: pydantic reads these annotations at registration.
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field, JsonValue

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.conversation import EntryType, Role, SessionExport
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.conversations import (
    CacheLookupOut,
    CachePutOut,
    ClearSessionOut,
    CompressionOut,
    EntryAddedOut,
    ExchangeOut,
    ImportSessionOut,
    RequestPageOut,
    SessionBriefOut,
    SessionConfigOut,
    SessionContextOut,
    SessionListOut,
    SessionOut,
    SessionStatsOut,
)
from server.settings import Settings
from server.tools import Project, container, tool
from server.toolsets import Toolset

__all__ = ["register"]

SessionId = Annotated[
    str, Field(description="The session's id, as returned by `start_session`.", max_length=128)
]
EntryTypeName = Literal["message", "tool_call", "tool_result", "context"]
RoleName = Literal["user", "assistant", "system"]

_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def register(mcp: MemstrataServer, settings: Settings) -> None:  # noqa: C901 - one closure per tool
    """Register the conversation-memory tools."""
    max_limit = settings.limits.max_limit

    @tool(
        mcp,
        toolset=Toolset.CONVERSATIONS,
        title="Start a conversation session",
        annotations=_WRITE_IDEMPOTENT,
    )
    async def start_session(
        ctx: Context[AppContext],
        session_id: Annotated[
            str | None,
            Field(description="Your own id for it (max 128 characters); omit for a new random id."),
        ] = None,
        project: Project = None,
    ) -> SessionOut:
        """Open a conversation session to record entries in; an existing id is reopened as is.

        Sessions keep a conversation across restarts: record entries with `add_session_entry`,
        read it back with `get_session_context`.
        """
        app = container(ctx)
        info, created = await app.conversations.start(app.project(project), session_id)
        return SessionOut.started(info, created)

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="List conversation sessions", annotations=_READ)
    async def list_sessions(
        ctx: Context[AppContext],
        limit: Annotated[
            int, Field(ge=1, le=max_limit, description=f"How many, 1-{max_limit}.")
        ] = 20,
        project: Project = None,
    ) -> SessionListOut:
        """List the project's sessions, most recently updated first."""
        app = container(ctx)
        infos = await app.conversations.list_sessions(app.project(project), limit)
        return SessionListOut(sessions=[SessionBriefOut.of(i) for i in infos])

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Record a session entry", annotations=_WRITE)
    async def add_session_entry(
        session_id: SessionId,
        type: Annotated[
            EntryTypeName,
            Field(
                description="message: something said; tool_call: a tool you called (tool_name "
                "+ arguments); tool_result: what it returned; context: file or other content "
                "added to the conversation (source = its path)."
            ),
        ],
        ctx: Context[AppContext],
        content: Annotated[
            str,
            Field(
                description="The text: the message, the result, the file content. May be "
                "empty for a tool_call."
            ),
        ] = "",
        role: Annotated[
            RoleName | None,
            Field(
                description="Required for messages. Defaults: tool_call assistant, others system."
            ),
        ] = None,
        tool_name: Annotated[
            str | None, Field(description="The tool's name (tool_call, tool_result).")
        ] = None,
        arguments: Annotated[
            dict[str, JsonValue] | None, Field(description="The call's arguments (tool_call).")
        ] = None,
        source: Annotated[
            str | None, Field(description="Where added context came from, e.g. a file path.")
        ] = None,
        is_error: Annotated[
            bool, Field(description="The tool result reports a failure (tool_result).")
        ] = False,
        project: Project = None,
    ) -> EntryAddedOut:
        """Record one entry of a conversation: a message, a tool call, its result, or context.

        When the session grows past its thresholds, older entries (all but the newest
        few, 10 by default) are compressed into a summary. If the result's `compression.status` is
        'summary_requested', write that summary yourself and submit it with
        `submit_session_summary` (the request comes once; later answers say
        'summary_pending' until you submit). The answer echoes ids and counts, not the entry.
        """
        app = container(ctx)
        added = await app.conversations.add_entry(
            app.project(project),
            session_id,
            type=EntryType(type),
            content=content,
            role=Role(role) if role else None,
            tool_name=tool_name,
            arguments=arguments,
            source=source,
            is_error=is_error,
        )
        return EntryAddedOut(
            session_id=session_id,
            entry_id=added.entry.id,
            type=added.entry.type,
            token_count=added.entry.token_count,
            active_entries=added.active_entries,
            active_tokens=added.active_tokens,
            compression=CompressionOut.of(added.compression) if added.compression else None,
            redacted=added.redacted,
        )

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Read a session's context", annotations=_READ)
    async def get_session_context(
        session_id: SessionId,
        ctx: Context[AppContext],
        token_budget: Annotated[
            int | None,
            Field(ge=1, le=10**9, description="Cut the text to at most this many tokens."),
        ] = None,
        project: Project = None,
    ) -> SessionContextOut:
        """Read a session back: summaries of older parts, then the recent conversation.

        The text has "=== Previous Conversation Summaries ===" (each with its time range),
        "=== Recent Conversation ===" and, if any, the cached tool results (each cut to about
        1,000 bytes; `lookup_tool_result` gives one whole). With a token_budget the newest
        parts are kept, conversation before cached results; below 22 the text is empty.
        """
        app = container(ctx)
        c = await app.conversations.context(app.project(project), session_id, token_budget)
        return SessionContextOut(
            session_id=session_id,
            text=c.text,
            summaries=len(c.summaries),
            entries=len(c.entries),
            exchanges=len(c.exchanges),
            omitted_summaries=c.omitted_summaries,
            omitted_entries=c.omitted_entries,
            omitted_exchanges=c.omitted_exchanges,
            cached_results=c.cached_results,
            omitted_cached_results=c.omitted_cached_results,
            tokens=c.tokens,
        )

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Session statistics", annotations=_READ)
    async def get_session_stats(
        session_id: SessionId, ctx: Context[AppContext], project: Project = None
    ) -> SessionStatsOut:
        """Count a session's entries (active, compressed), summaries, tokens and cached results."""
        app = container(ctx)
        stats = await app.conversations.stats(app.project(project), session_id)
        conv = app.conversations
        return SessionStatsOut.of(session_id, stats, conv.counter_name, conv.summarizer_name)

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Compress a session", annotations=_WRITE)
    async def compress_session(
        session_id: SessionId,
        ctx: Context[AppContext],
        source: Annotated[
            Literal["auto", "summarizer", "client", "fallback"],
            Field(
                description="Who writes the summary. auto: the server's summarizer if one is "
                "configured, else you (status 'summary_requested'); client: you; fallback: a "
                "short factual digest written by the server."
            ),
        ] = "auto",
        project: Project = None,
    ) -> CompressionOut:
        """Compress older entries (all but the newest few, 10 by default) into one summary now.

        If the status is 'summary_requested', follow `summary_request.instructions` on its
        `transcript` (whole entries: `read_summary_request`) and call `submit_session_summary`
        with what you wrote.
        """
        app = container(ctx)
        result = await app.conversations.compress(app.project(project), session_id, source)
        return CompressionOut.of(result)

    @tool(
        mcp,
        toolset=Toolset.CONVERSATIONS,
        title="Read a pending summary request",
        annotations=_READ,
    )
    async def read_summary_request(
        session_id: SessionId,
        ctx: Context[AppContext],
        page: Annotated[
            int, Field(ge=1, description="Which page of the whole transcript, from 1.")
        ] = 1,
        project: Project = None,
    ) -> RequestPageOut:
        """Read the whole transcript of the summary you were asked to write, a page at a time.

        The request in a 'summary_requested' answer is condensed; this gives every entry
        word for word, in pages of about summary_request_bytes.
        """
        app = container(ctx)
        p = await app.conversations.read_request(app.project(project), session_id, page)
        return RequestPageOut(
            session_id=session_id,
            entry_ids=list(p.entry_ids),
            page=p.page,
            pages=p.pages,
            transcript=p.transcript,
            next_page=p.page + 1 if p.page < p.pages else None,
        )

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Submit a session summary", annotations=_WRITE)
    async def submit_session_summary(
        session_id: SessionId,
        summary: Annotated[str, Field(description="The summary you wrote of the transcript.")],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> CompressionOut:
        """Store the summary you wrote after a 'summary_requested'; it replaces those entries."""
        app = container(ctx)
        result = await app.conversations.submit_summary(app.project(project), session_id, summary)
        return CompressionOut.of(result)

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Finalise a Q&A exchange", annotations=_WRITE)
    async def finalize_exchange(
        session_id: SessionId,
        question: Annotated[str, Field(description="The user's question.")],
        answer: Annotated[str, Field(description="Your final answer to it.")],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> ExchangeOut:
        """Close a question/answer cycle: store it, fold old cycles, age the tool-result cache.

        The newest exchanges stay whole; older ones fold into the session summary. A long
        answer is stored shortened. Every cached tool result loses one exchange of life.
        """
        app = container(ctx)
        done = await app.conversations.finalize_exchange(
            app.project(project), session_id, question, answer
        )
        return ExchangeOut.of(session_id, done)

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Export a session", annotations=_READ)
    async def export_session(
        session_id: SessionId, ctx: Context[AppContext], project: Project = None
    ) -> SessionExport:
        """Export a whole session (entries, summaries, exchanges, cache) as one JSON object.

        `import_session` takes the same object back, losslessly.
        """
        app = container(ctx)
        return await app.conversations.export(app.project(project), session_id)

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Import a session", annotations=_WRITE)
    async def import_session(
        data: Annotated[
            dict[str, JsonValue],
            Field(
                description="An object written by `export_session` (over HTTP, the request "
                f"is at most {settings.http_max_body_bytes:,} bytes)."
            ),
        ],
        ctx: Context[AppContext],
        session_id: Annotated[
            str | None, Field(description="Import under this id instead of the exported one.")
        ] = None,
        project: Project = None,
    ) -> ImportSessionOut:
        """Recreate a session from an `export_session` object; an existing id is refused."""
        app = container(ctx)
        imported = await app.conversations.import_(app.project(project), data, session_id)
        done = imported.session
        return ImportSessionOut(
            session_id=done.session_id,
            entries=len(done.entries),
            summaries=len(done.summaries),
            exchanges=len(done.exchanges),
            cached_results=len(done.cache),
            redacted=imported.redacted,
        )

    @tool(mcp, toolset=Toolset.CONVERSATIONS, title="Delete a session", annotations=_DESTROY)
    async def clear_session(
        session_id: SessionId,
        ctx: Context[AppContext],
        confirm: Annotated[
            bool, Field(description="Must be true: the session cannot be recovered.")
        ] = False,
        project: Project = None,
    ) -> ClearSessionOut:
        """Delete a session with all its entries, summaries, exchanges and cached results."""
        app = container(ctx)
        removed = await app.conversations.clear(app.project(project), session_id, confirm=confirm)
        return ClearSessionOut(session_id=session_id, entries_removed=removed)

    @tool(
        mcp,
        toolset=Toolset.CONVERSATIONS,
        title="Change a session's memory settings",
        annotations=_WRITE_IDEMPOTENT,
    )
    async def update_memory_config(
        session_id: SessionId,
        changes: Annotated[
            dict[str, JsonValue],
            Field(
                description="Settings to change for this session, e.g. "
                '{"compress_token_threshold": 20000, "auto_compress": false}; null restores '
                f"the server default. Names: {', '.join(ConversationPolicy.model_fields)}."
            ),
        ],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> SessionConfigOut:
        """Change compression thresholds and limits for one session, at run time."""
        app = container(ctx)
        policy = await app.conversations.update_config(app.project(project), session_id, changes)
        return SessionConfigOut(session_id=session_id, config=policy)

    @tool(
        mcp,
        toolset=Toolset.CONVERSATIONS,
        title="Cache a tool result",
        annotations=_WRITE_IDEMPOTENT,
    )
    async def cache_tool_result(
        session_id: SessionId,
        tool_name: Annotated[str, Field(description="The tool that produced the result.")],
        parameters: Annotated[
            JsonValue,
            Field(description="The arguments it was called with: a JSON object (or its text)."),
        ],
        result: Annotated[JsonValue, Field(description="What it returned (any JSON).")],
        duration: Annotated[
            int,
            Field(description="For how many exchanges (finalize_exchange calls) to keep it, 1+."),
        ],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> CachePutOut:
        """Keep a tool's result for a number of exchanges, to reuse instead of calling again."""
        app = container(ctx)
        item = await app.conversations.cache_put(
            app.project(project), session_id, tool_name, parameters, result, duration
        )
        return CachePutOut.of(session_id, item)

    @tool(
        mcp,
        toolset=Toolset.CONVERSATIONS,
        title="Look up a cached tool result",
        annotations=_WRITE_IDEMPOTENT,
    )
    async def lookup_tool_result(
        session_id: SessionId,
        tool_name: Annotated[str, Field(description="The tool you are about to call.")],
        parameters: Annotated[
            JsonValue, Field(description="The arguments you would call it with (JSON object).")
        ],
        ctx: Context[AppContext],
        project: Project = None,
    ) -> CacheLookupOut:
        """Check for a cached result of this exact call; a hit renews its life.

        Parameters match whatever their key order. On a miss, call the tool and cache it.
        """
        app = container(ctx)
        item = await app.conversations.cache_lookup(
            app.project(project), session_id, tool_name, parameters
        )
        if item is None:
            return CacheLookupOut(session_id=session_id, hit=False)
        return CacheLookupOut(
            session_id=session_id,
            hit=True,
            result=item.result,
            remaining=item.remaining,
            duration=item.duration,
        )
