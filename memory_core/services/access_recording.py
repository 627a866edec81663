"""Whether handing memories out records their use, for the caller at hand.

A memory's use (access_count, last_accessed, and the tier it keeps ACTIVE) is what keeps it
from ageing and being pruned. A caller that may only read (an HTTP token granted read-only
use: a dashboard script, a CI reader, another team's assistant) must not be able to keep
memories alive, or to make the ones it reads look used to the owner. The transport knows
who the caller is; the services do not, and should not take a flag through every call. So
the transport marks the context (`access_unrecorded`), which contextvars carry into every
task the request starts, and the services hand memories out through `hand_out` here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from memory_core.domain.models import Memory
from memory_core.domain.tiers import handed_out
from memory_core.ports import MemoryRepository

__all__ = ["access_unrecorded", "hand_out", "hand_out_read", "recording_access"]

_RECORDING: ContextVar[bool] = ContextVar("memstrata_access_recording", default=True)


@contextmanager
def access_unrecorded() -> Iterator[None]:
    """Within this block (and the tasks it starts), handing out records no use."""
    token = _RECORDING.set(False)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def recording_access() -> bool:
    """Whether the current context records the use of the memories it is handed."""
    return _RECORDING.get()


async def hand_out(
    repo: MemoryRepository, project: str, ids: Sequence[int], at: datetime
) -> list[Memory]:
    """`repo.hand_out` when recording; otherwise the same rows as stored, untouched.

    Either way: the rows in the order of `ids`, those no longer present left out.
    """
    if recording_access():
        return await repo.hand_out(project, ids, at)
    # One lookup per id: callers hand out at most a page of rows (`limit` <= Limits.max_limit).
    found = [await repo.get(project, memory_id) for memory_id in ids]
    return [memory for memory in found if memory is not None]


async def hand_out_read(
    repo: MemoryRepository, project: str, memories: Sequence[Memory], at: datetime
) -> list[Memory]:
    """`hand_out` for rows just read: their use recorded (when recording), not read back.

    Trigger: a search, whose hits were read a moment ago. Why: reading them back cost the
    search a round trip, and the write need not hold up the answer (`repo.record_access`
    may finish it after the request). Outcome: the rows as recording leaves them.
    """
    if not recording_access():
        return list(memories)
    await repo.record_access(project, [m.id for m in memories], at)
    return [handed_out(m, at) for m in memories]
