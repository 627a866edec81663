"""Tools of user preferences and playbooks (per user, across conversations)."""

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field, JsonValue

from memory_core.domain.match import Match
from server.app_context import AppContext
from server.protocol.surface import MemstrataServer
from server.schemas.knowledge import (
    PlaybookBriefOut,
    PlaybookFindOut,
    PlaybookMatchOut,
    PlaybookOut,
    PlaybookRecordOut,
    PreferenceDeleteOut,
    PreferenceFindOut,
    PreferenceGetOut,
    PreferenceListOut,
    PreferenceMatchOut,
    PreferenceOut,
    PreferenceUpdateOut,
)
from server.settings import Settings
from server.tools import container, tool
from server.toolsets import Toolset

__all__ = ["register"]

_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

User = Annotated[str, Field(description="The user whose preferences these are (e.g. an id).")]
Limit = Annotated[int, Field(ge=1, le=50, description="Most results, 1-50.")]


def register(mcp: MemstrataServer, settings: Settings) -> None:
    """Register preferences_update/get/find/list/delete and playbook_record/find."""
    # Where a partial playbook match starts (PreferenceService._playbook_bands).
    threshold = settings.ranking.match_partial_cosine

    @tool(mcp, toolset=Toolset.PREFERENCES, title="Set a user preference", annotations=_WRITE)
    async def preferences_update(
        user: User,
        key: Annotated[str, Field(description="The rule's name, e.g. 'response.verbosity'.")],
        value: Annotated[
            str, Field(description="The rule itself, e.g. 'Short answers, no preamble.'")
        ],
        ctx: Context[AppContext],
        flow_id: Annotated[
            str | None, Field(description="The flow this rule belongs to, if only one.")
        ] = None,
    ) -> PreferenceUpdateOut:
        """Set a rule that changes how you behave for this user, replacing the old value.

        Use when the user states a lasting preference (verbosity, tone, units, tools to use).
        Rules apply across all of the user's conversations and are never seen by others.
        """
        app = container(ctx)
        result = await app.knowledge.preferences.update(user, key, value, flow_id=flow_id)
        return PreferenceUpdateOut(
            user=result.preference.user,
            status="created" if result.previous_value is None else "updated",
            preference=PreferenceOut.of(result.preference),
            previous_value=result.previous_value,
            notes=result.notes,
            redacted=result.redacted,
        )

    @tool(mcp, toolset=Toolset.PREFERENCES, title="Get a user preference", annotations=_READ)
    async def preferences_get(
        user: User,
        key: Annotated[str, Field(description="The rule's exact name.")],
        ctx: Context[AppContext],
    ) -> PreferenceGetOut:
        """Read one rule of a user by its exact key. A missing key is not an error: found=false.

        Use `preferences_find` when you know the situation but not the key.
        """
        app = container(ctx)
        found = await app.knowledge.preferences.get(user, key)
        return PreferenceGetOut(
            user=user,
            key=key,
            found=found is not None,
            preference=PreferenceOut.of(found) if found else None,
            message=f"Found {key!r}."
            if found
            else (f"No rule {key!r} for this user; try `preferences_find` with the situation."),
        )

    @tool(
        mcp,
        toolset=Toolset.PREFERENCES,
        title="Find preferences for a situation",
        annotations=_READ,
    )
    async def preferences_find(
        user: User,
        situation: Annotated[
            str, Field(description="What you are about to do, e.g. 'summarising a report'.")
        ],
        ctx: Context[AppContext],
        flow_id: Annotated[
            str | None, Field(description="The flow you are in, if known: its rules match exactly.")
        ] = None,
        limit: Limit = 5,
    ) -> PreferenceFindOut:
        """Find the user's rules that apply to what you are about to do, strongest first.

        Inside a known flow (`flow_id` with rules recorded for it) those rules come back
        exactly; otherwise rules are matched by meaning against their keys and values, or by
        words when no embedding model is available. Each is marked strong, partial or weak;
        a user with few rules gets all of them ranked, weak ones too: follow those only if
        they fit. Call it before acting for a user.
        """
        app = container(ctx)
        result = await app.knowledge.preferences.find(user, situation, flow_id=flow_id, limit=limit)
        return PreferenceFindOut(
            user=user,
            mode=result.mode,
            count=len(result.matches),
            matches=[
                PreferenceMatchOut(
                    preference=PreferenceOut.of(m.item), score=m.score, match=m.match
                )
                for m in result.matches
            ],
            notes=result.notes,
        )

    @tool(mcp, toolset=Toolset.PREFERENCES, title="List rules and playbooks", annotations=_READ)
    async def preferences_list(user: User, ctx: Context[AppContext]) -> PreferenceListOut:
        """List every rule (by key) and playbook (oldest first) of a user, to review or correct.

        Details:
        Playbooks are listed without their slots and tool calls (`playbook_find` returns
        those). Remove entries with `preferences_delete`.
        """
        app = container(ctx)
        rules, playbooks = await app.knowledge.preferences.list_all(user)
        return PreferenceListOut(
            user=user,
            rules=[PreferenceOut.of(p) for p in rules],
            playbooks=[PlaybookBriefOut.of(p) for p in playbooks],
        )

    @tool(
        mcp,
        toolset=Toolset.PREFERENCES,
        title="Delete a user's rules or playbooks",
        annotations=_DESTROY,
    )
    async def preferences_delete(
        user: User,
        ctx: Context[AppContext],
        keys: Annotated[
            list[str] | None, Field(description="Rules to delete, by exact key.", max_length=1000)
        ] = None,
        playbook_ids: Annotated[
            list[int] | None, Field(description="Playbooks to delete, by id.", max_length=1000)
        ] = None,
        confirm: Annotated[
            bool, Field(description="Needed to delete ALL of the user's rules and playbooks.")
        ] = False,
    ) -> PreferenceDeleteOut:
        """Permanently delete a user's rules (by key) and playbooks (by id).

        With neither `keys` nor `playbook_ids`, deletes everything of the user: only when
        the user asked, with confirm=true.
        """
        app = container(ctx)
        done = await app.knowledge.preferences.delete(
            user, keys=keys, playbook_ids=playbook_ids, confirm=confirm
        )
        missing = [k for k in keys or [] if k not in done.keys]
        missing += [str(i) for i in playbook_ids or [] if i not in done.playbook_ids]
        return PreferenceDeleteOut(
            user=user,
            deleted_keys=done.keys,
            deleted_playbook_ids=done.playbook_ids,
            not_found=missing,
        )

    @tool(mcp, toolset=Toolset.PREFERENCES, title="Record a playbook", annotations=_WRITE)
    async def playbook_record(
        user: User,
        flow: Annotated[str, Field(description="The flow (skill, task type) this solved.")],
        user_query: Annotated[str, Field(description="What the user asked, in their words.")],
        slots: Annotated[
            dict[str, JsonValue], Field(description="The slots filled, as a JSON object.")
        ],
        tool_calls: Annotated[
            list[JsonValue], Field(description="The tool calls made, in order, as JSON values.")
        ],
        outcome: Annotated[str, Field(description="What came of it, e.g. 'booked, confirmed'.")],
        ctx: Context[AppContext],
    ) -> PlaybookRecordOut:
        """Record a trajectory that worked, so a later similar request can follow it.

        Call after a flow succeeds. Recording the identical trajectory again keeps one copy
        (status "duplicate"). Find playbooks with `playbook_find`.
        """
        app = container(ctx)
        result = await app.knowledge.preferences.record_playbook(
            user, flow, slots, tool_calls, outcome, user_query
        )
        return PlaybookRecordOut(
            user=result.playbook.user,
            status="created" if result.created else "duplicate",
            playbook=PlaybookOut.of(result.playbook),
            notes=result.notes,
            redacted=result.redacted,
        )

    @tool(mcp, toolset=Toolset.PREFERENCES, title="Find playbooks", annotations=_READ)
    async def playbook_find(
        user: User,
        query: Annotated[str, Field(description="The user's current request.")],
        ctx: Context[AppContext],
        flow: Annotated[
            str | None, Field(description="The flow: returns its playbooks, exactly.")
        ] = None,
        limit: Limit = 5,
        session_id: Annotated[
            str | None,
            Field(
                description="Your session: the best playbook is also written into its "
                "scratchpad before the flow runs.",
                max_length=128,
            ),
        ] = None,
    ) -> PlaybookFindOut:
        """Find proven recipes: the user's playbooks whose request means what `query` means.

        Each is marked strong, partial or weak, strongest first. With `flow`, every playbook
        of that flow comes back. Without it, weak ones are left out unless the user has few
        playbooks; nothing strong or partial means plan from scratch. With `session_id`, the
        best one is also written into that session's scratchpad (a weak one only of `flow`).
        """
        app = container(ctx)
        seeded: int | None = None
        result = await app.knowledge.preferences.find_playbooks(user, query, flow=flow, limit=limit)
        # A weak best match is no recipe to follow, unless it is of the flow asked for.
        best = result.matches[0] if result.matches else None
        if session_id is not None and best and (flow or best.match is not Match.WEAK):
            note = await app.knowledge.scratchpad.seed_playbook(session_id, best.item)
            seeded = note.id
        return PlaybookFindOut(
            user=user,
            mode=result.mode,
            threshold=settings.knowledge.keyword_overlap if result.mode == "keyword" else threshold,
            count=len(result.matches),
            matches=[
                PlaybookMatchOut(playbook=PlaybookOut.of(m.item), similarity=m.score, match=m.match)
                for m in result.matches
            ],
            notes=result.notes,
            scratchpad_snippet_id=seeded,
        )
