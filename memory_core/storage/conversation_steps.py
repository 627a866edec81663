"""The backend-neutral steps of the conversation stores' write transactions.

Both backends run the same algorithm inside one transaction and differ only in their SQL and
drivers: which exchanges leave the active window for the running Q&A summary, whether a new
summary settles the pending request, what finalising an exchange reports, and the conflict an
import of an existing session meets. Those steps live here once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.conversation import CachedResult, Exchange, ExchangeOutcome
from memory_core.errors import ConflictError
from memory_core.ports.conversations import FoldFn

__all__ = [
    "QaFold",
    "exchange_outcome",
    "fold_overflow",
    "new_exchange",
    "session_exists",
    "settles_pending",
]


@dataclass(frozen=True)
class QaFold:
    """The running Q&A summary after the overflowing exchanges were folded into it."""

    overflow: list[Exchange]
    summary: str
    covers_from: datetime | None
    covers_until: datetime | None


def fold_overflow(
    active: Sequence[Exchange],
    max_active: int,
    qa: tuple[str, datetime | None, datetime | None],
    fold: FoldFn,
) -> QaFold:
    """Fold the oldest active exchanges beyond `max_active` into the summary `qa`.

    Args:
        active: The active (unfolded) exchanges, oldest first, the new one included.
        max_active: How many stay active.
        qa: The running summary and the span it covers (None before anything was folded).
        fold: The summary's fold rule.
    """
    summary, covers_from, covers_until = qa
    overflow = list(active[: max(0, len(active) - max_active)])
    if overflow:
        summary = fold(summary, overflow)
        covers_from = covers_from or overflow[0].timestamp
        covers_until = overflow[-1].timestamp
    return QaFold(overflow, summary, covers_from, covers_until)


def new_exchange(number: int, exchange: tuple[str, str, bool], now: datetime) -> Exchange:
    """The exchange a store inserts: (question, answer, answer shortened), active."""
    question, answer, shortened = exchange
    return Exchange(
        id=number,
        question=question,
        answer=answer,
        answer_shortened=shortened,
        timestamp=now,
        folded=False,
    )


def exchange_outcome(
    stored: Exchange, qa: QaFold, expired: Iterable[CachedResult]
) -> ExchangeOutcome:
    """What finalising `stored` did (it is folded itself when the window is that small)."""
    folded = any(x.id == stored.id for x in qa.overflow)
    return ExchangeOutcome(
        exchange=stored.model_copy(update={"folded": folded}),
        folded=tuple(qa.overflow),
        qa_summary=qa.summary,
        expired=tuple(expired),
    )


def settles_pending(pending_json: str | None, entry_ids: Iterable[int]) -> bool:
    """Whether a summary of `entry_ids` answers the session's pending request (stored JSON)."""
    if not pending_json:
        return False
    return bool(set(json.loads(pending_json)["entry_ids"]) & set(entry_ids))


def session_exists(session_id: str) -> ConflictError:
    """The error of importing a session under an id the project already has."""
    return ConflictError(
        f"session {session_id!r} already exists",
        next_step="Import it under another session_id (or delete that session first).",
    )
