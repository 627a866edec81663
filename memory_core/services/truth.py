"""One truth per fact after the write: updates with history, pins, listings, forgets (issue 32).

`MemoryService` keeps writing and finding; this service changes what is stored without
adding rows: an update keeps the previous version, a pin keeps a memory from ageing out, a
listing pages through memories without marking them as used, and a forget deletes by id or
by filter after a dry run, with a receipt read back from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from pydantic import Field, JsonValue

from memory_core.domain.dates import dates_of
from memory_core.domain.frozen import Frozen as _Frozen
from memory_core.domain.inputs import (
    check_author,
    check_ids,
    check_limit,
    check_metadata,
    check_project,
    check_session,
    check_text,
    check_time_range,
    content_hash,
)
from memory_core.domain.models import BrowseQuery, Memory
from memory_core.domain.redaction import Redactor
from memory_core.domain.tags import check_tags
from memory_core.domain.tokens import count_tokens
from memory_core.domain.versions import ForgetReceipt, MemoryChange, MemoryVersion
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.services.memories import MemoryService

__all__ = ["FORGET_SAMPLE", "TruthService", "UpdateResult"]

log = structlog.get_logger(__name__)

# Memories a forget's dry run shows of those it would delete.
FORGET_SAMPLE = 5


class UpdateResult(_Frozen):
    """An update: the memory now and before, or the memory that already says the new text."""

    memory: Memory | None = None
    previous: Memory | None = None
    duplicate_of: Memory | None = None
    changed: list[str] = Field(default_factory=list)
    redacted: dict[str, int] = Field(default_factory=dict)


@dataclass(frozen=True)
class TruthService:
    """Updates, history, pins, side-effect-free listings and forgets over a MemoryService."""

    memories: MemoryService

    async def update(
        self,
        project: str,
        memory_id: int,
        *,
        content: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
        tags: Sequence[str] | None = None,
    ) -> UpdateResult:
        """Change a memory's content, metadata or tags; the previous version is kept.

        New content is redacted, re-dated and re-embedded as a write would be. Content that
        another memory of the same project and layer already holds changes nothing: that
        memory is returned as `duplicate_of`.

        Raises:
            MemoryNotFoundError: No such id in this project.
            InvalidInputError: Nothing to change, or a field is malformed.
        """
        service = self.memories
        project = check_project(project)
        if content is None and metadata is None and tags is None:
            raise InvalidInputError("content", "or metadata or tags is required to update")
        old = await service.peek(project, memory_id)
        gate = Redactor(service.redaction)
        change = MemoryChange(tags=None if tags is None else check_tags(tags))
        if metadata is not None:
            checked = gate.mapping(check_metadata(metadata, service.limits))
            change = change.model_copy(update={"metadata": checked})
        if content is not None:
            text = gate.text(
                check_text("content", content, max_chars=service.limits.max_content_chars)
            )
            change = change.model_copy(
                update={
                    "content": text,
                    "content_hash": content_hash(text),
                    "token_count": count_tokens(text),
                    "dates": dates_of(text, old.happened_at),
                }
            )
        outcome = await service.repo.update(project, memory_id, change, service.clock.now())
        if outcome.duplicate_of is not None:
            return UpdateResult(duplicate_of=outcome.duplicate_of, redacted=gate.report.as_dict())
        if outcome.memory is None or outcome.previous is None:
            raise MemoryNotFoundError(memory_id, project)
        now, before = outcome.memory, outcome.previous
        changed = [
            name
            for name in ("content", "metadata", "tags")
            if getattr(now, name) != getattr(before, name)
        ]
        if "content" in changed and service.indexer is not None:
            await service._index_committed(now)  # the old vector went with the old text
        log.info("memory.updated", memory_id=memory_id, changed=changed)
        return UpdateResult(
            memory=now, previous=before, changed=changed, redacted=gate.report.as_dict()
        )

    async def history(self, project: str, memory_id: int) -> list[MemoryVersion]:
        """A memory's earlier versions, oldest first (nothing is marked as used).

        Raises:
            MemoryNotFoundError: No such id in this project.
        """
        memory = await self.memories.peek(project, memory_id)
        return await self.memories.repo.versions(memory.project, memory.id)

    async def replaced(self, project: str, memory_id: int) -> list[Memory]:
        """The memories `memory_id` superseded ("supersedes #m"), newest first; marks nothing.

        Raises:
            MemoryNotFoundError: No such id in this project.
        """
        memory = await self.memories.peek(project, memory_id)
        return await self.memories.repo.superseded_rows(memory.project, memory.id)

    async def pin(self, project: str, ids: Sequence[int], *, pinned: bool = True) -> list[Memory]:
        """Pin (never expire, never pruned) or unpin memories; returns those found.

        Raises:
            MemoryNotFoundError: None of the ids is a memory of this project.
        """
        project = check_project(project)
        wanted = check_ids("ids", ids)
        if not wanted:
            raise InvalidInputError("ids", "must name at least one memory")
        found = await self.memories.repo.set_pinned(project, wanted, pinned)
        if not found:
            raise MemoryNotFoundError(wanted[0], project)
        log.info("memories.pinned", ids=[m.id for m in found], pinned=pinned)
        return found

    def _checked(self, query: BrowseQuery) -> BrowseQuery:
        service = self.memories
        check_project(query.project)
        check_limit("limit", query.limit, service.limits)
        check_session(query.session_id)
        since, until = check_time_range(query.since, query.until)
        if query.before_id is not None and query.before_id < 1:
            raise InvalidInputError("before_id", f"must be a positive id (got {query.before_id})")
        return query.model_copy(
            update={
                "tags": check_tags(query.tags),
                "author": check_author(query.author),
                "ids": check_ids("ids", query.ids),
                "since": since,
                "until": until,
            }
        )

    async def list_memories(self, query: BrowseQuery) -> tuple[list[Memory], int | None]:
        """A page of memories, newest first, and the cursor of the next page (None: last).

        Nothing is marked as used. The cursor is the last id shown: rows written meanwhile
        get higher ids and never shift a later page.

        Raises:
            InvalidInputError: A filter is malformed (the field is named).
        """
        query = self._checked(query)
        page = await self.memories.browse(query.model_copy(update={"limit": query.limit + 1}))
        more = len(page) > query.limit
        page = page[: query.limit]
        return page, (page[-1].id if more and page else None)

    async def forget(
        self, query: BrowseQuery, *, dry_run: bool = True, sample: int = FORGET_SAMPLE
    ) -> ForgetReceipt:
        """Delete the memories `query` selects (by ids and/or filters), or preview it.

        A dry run (the default) counts them and shows a sample; the real one deletes them
        from every place they live and reads back what is left (the receipt).

        Raises:
            InvalidInputError: No id and no filter (deleting a whole project is `clear`).
        """
        query = self._checked(query)
        filters = (
            query.ids,
            query.tags,
            query.layer,
            query.tier,
            query.session_id,
            query.author,
            query.since,
            query.until,
            query.pinned,
            query.superseded,
        )
        if not any(f not in (None, ()) for f in filters):
            raise InvalidInputError(
                "ids", "or a filter is required (a whole project or layer is `clear`)"
            )
        if query.tier is not None:
            raise InvalidInputError("tier", "is not a forget filter (pruning forgets by age)")
        receipt = await self.memories.repo.forget(query, dry_run=dry_run, sample=sample)
        if not dry_run:
            log.info("memories.forgotten", count=receipt.rows)
        return receipt
