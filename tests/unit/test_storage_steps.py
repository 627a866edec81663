"""The backend-neutral steps both storage backends share, checked without a database.

The contract tests (tests/storage, tests/services with the `storage` fixture) run these steps
through both backends; here each rule is pinned down on its own, edges included.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.conversation import Exchange
from memory_core.domain.hook_session import HookSession, TranscriptCursor
from memory_core.errors import ConflictError, SchemaMismatchError
from memory_core.ports.transfer import table
from memory_core.storage.conversation_steps import (
    exchange_outcome,
    fold_overflow,
    session_exists,
    settles_pending,
)
from memory_core.storage.migrations import Migration, pending_migrations, schema_number
from memory_core.storage.transfer_rows import TABLE, count_query, import_columns, page_query

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def exchange(n: int) -> Exchange:
    return Exchange(
        id=n,
        question=f"q{n}",
        answer=f"a{n}",
        answer_shortened=False,
        timestamp=T0 + timedelta(minutes=n),
        folded=False,
    )


def folding(summary: str, gone: Sequence[Exchange]) -> str:
    return summary + "".join(f"[{x.id}]" for x in gone)


def test_nothing_folds_while_the_window_has_room() -> None:
    qa = fold_overflow([exchange(1), exchange(2)], 2, ("old", None, None), folding)
    assert qa.overflow == [] and qa.summary == "old"
    assert (qa.covers_from, qa.covers_until) == (None, None)


def test_the_oldest_exchanges_fold_and_the_span_grows_forward() -> None:
    earlier = T0 - timedelta(days=1)
    active = [exchange(n) for n in (3, 4, 5, 6)]
    qa = fold_overflow(active, 1, ("s", earlier, earlier), folding)
    assert [x.id for x in qa.overflow] == [3, 4, 5] and qa.summary == "s[3][4][5]"
    assert qa.covers_from == earlier  # the span starts where it started
    assert qa.covers_until == exchange(5).timestamp
    first = fold_overflow(active, 3, ("", None, None), folding)
    assert first.covers_from == first.covers_until == exchange(3).timestamp


def test_the_outcome_says_whether_the_new_exchange_folded_itself() -> None:
    new = exchange(2)
    kept = exchange_outcome(
        new, fold_overflow([exchange(1), new], 1, ("", None, None), folding), []
    )
    assert not kept.exchange.folded and [x.id for x in kept.folded] == [1]
    gone = exchange_outcome(
        new, fold_overflow([exchange(1), new], 0, ("", None, None), folding), []
    )
    assert gone.exchange.folded and gone.qa_summary == "[1][2]"


def test_a_summary_settles_the_pending_request_only_when_they_share_entries() -> None:
    pending = '{"entry_ids": [3, 4], "requested_at_entry": 9}'
    assert settles_pending(pending, [4, 5])
    assert not settles_pending(pending, [1, 2])
    assert not settles_pending(None, [3]) and not settles_pending("", [3])


def test_importing_an_existing_session_names_it_and_the_way_out() -> None:
    error = session_exists("s1")
    assert isinstance(error, ConflictError) and "'s1'" in str(error)


def migration(n: int) -> Migration:
    return Migration(n, f"{n:04d}_step", "SELECT 1")


def test_pending_migrations_come_in_order_and_a_newer_store_is_refused() -> None:
    known = [migration(1), migration(2), migration(3)]
    assert [m.number for m in pending_migrations(known, {"0001_step"})] == [2, 3]
    assert pending_migrations(known, {m.name for m in known}) == []
    with pytest.raises(SchemaMismatchError, match="0004_later"):
        pending_migrations(known, {"0001_step", "0004_later"})
    assert schema_number([]) == 0 and schema_number(["0002_x", "0010_y", "0003_z"]) == 10


def test_one_table_map_covers_every_record_kind_and_imports_may_drop_ids() -> None:
    assert TABLE["memory"] == "context_snapshots"
    spec = table("memory")
    assert import_columns(spec, keep_ids=True) == list(spec.names)
    assert "id" not in import_columns(spec, keep_ids=False)


def test_pages_are_cut_by_key_with_the_backends_placeholders() -> None:
    sql, params = page_query("memory", "p", (7,), 50, mark=lambda n: f"${n}")
    assert sql.endswith("WHERE (id) > ($1) AND project = $2 ORDER BY id LIMIT $3")
    assert params == [7, "p", 50]
    sql, params = page_query(
        "preference", "p", None, 10, mark=lambda n: "?", key=lambda k: f"{k} COLLATE x"
    )
    assert "WHERE" not in sql  # preferences have no project: --project does not filter them
    assert "ORDER BY" in sql and "COLLATE x" in sql and params == [10]
    assert count_query("memory", "p", lambda n: "?") == (
        "SELECT count(*) FROM context_snapshots WHERE project = ?",
        ["p"],
    )
    assert count_query("memory", None, lambda n: "?")[1] == []


def test_a_hook_session_lists_only_memories_not_injected_yet() -> None:
    state = HookSession("p", "s", None, 0, (1, 2), TranscriptCursor(), None, T0)
    assert state.not_injected([3, 2, 3, 4, 1]) == [3, 4]
