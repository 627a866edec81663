"""Hostile export lines on both backends' import paths (hypothesis): refused by line, or stored.

Each example takes a good record of one kind (tests/services/test_transfer_records.py) and
puts a hostile value in one of its fields (or in the header, or in place of the line): huge
and negative integers, NaN and infinities, times at the ends of the calendar with an offset,
wrong types, deep nesting, lone surrogates, NUL, long text. The whole import runs as
`memstrata import` runs it: `parse_export`, then `import_records` into a real SQLite file
and a real PostgreSQL database. Either the file is refused with an InvalidInputError naming
the line and the field, or every row is written on both backends: never another exception
(issue 34.5: a traceback, an overflow in a driver, a constraint the gate did not know).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import TABLES, MemoryTransfer, table
from memory_core.services.transfer import import_records, parse_export
from memory_core.storage import postgres
from memory_core.storage.postgres.transfer import PostgresMemoryTransfer
from memory_core.storage.sqlite import SqliteSession, apply_migrations, open_database
from memory_core.storage.sqlite.transfer import SqliteMemoryTransfer
from tests.pg import PostgresServer
from tests.services.test_transfer_records import GOOD, HEADER, NOW

# A child line needs its parent on an earlier line (a session, a document, a memory).
_PARENTS = {
    "memory_version": "memory",
    "conversation_summary": "conversation_session",
    "conversation_entry": "conversation_session",
    "conversation_exchange": "conversation_session",
    "tool_result": "conversation_session",
    "document_chunk": "document",
}

huge_ints = st.sampled_from(
    [
        -1,
        -(2**31),
        0,
        2**31 - 1,
        2**31,
        2**53 - 1,
        2**53 + 1,
        2**63 - 1,
        2**63,
        2**64,
        2**70,
        -(2**70),
    ]
)
odd_floats = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 5e-324, 0.5])
edge_times = st.sampled_from(
    [
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+23:59",
        "9999-12-31T23:59:59.999999+00:00",
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00+00:01",
        "2026-11-20T10:00:00+14:00",
        "2026-11-20",
        "2026-02-30T00:00:00Z",
        "T10:00",
        "now",
    ]
)
odd_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "🎉", "x" * 70_000, "NaN", "[]", "{}"]
    ),
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


deep = st.sampled_from([7, 9, 50, 500]).map(_nested)
json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), huge_ints, odd_floats, odd_text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=8,
)
hostile = st.one_of(
    huge_ints, odd_floats, edge_times, odd_text, json_like, deep, st.booleans(), st.none()
)
# A JSON text column (config, arguments, slots, ...) holding hostile JSON as text.
as_json_text = st.one_of(json_like, deep).map(lambda v: json.dumps(v, allow_nan=True))


@st.composite
def hostile_files(draw: st.DrawFn) -> list[str]:
    """An export whose one line (or header) holds a hostile value."""
    kind = draw(st.sampled_from([spec.kind for spec in TABLES]))
    record: dict[str, Any] = {"kind": kind, **GOOD[kind]}
    header = dict(HEADER)
    where = draw(st.sampled_from(["field", "field", "field", "extra", "header", "line"]))
    line: str | None = None
    if where == "field":
        name = draw(st.sampled_from([*table(kind).names, "kind"]))
        record[name] = draw(st.one_of(hostile, as_json_text))
    elif where == "extra":
        record[draw(odd_text)] = draw(hostile)
    elif where == "header":
        header[draw(st.sampled_from(sorted(HEADER)))] = draw(hostile)
    else:
        line = draw(
            st.sampled_from(
                ["\ufeff{}", "{} {}", '{"kind": "memory"', "[" * 5000 + "]" * 5000, '"\\ud800"']
            )
        )
    lines = [json.dumps(header, allow_nan=True)]
    parent = _PARENTS.get(kind)
    if parent is not None:
        lines.append(json.dumps({"kind": parent, **GOOD[parent]}))
    lines.append(line if line is not None else json.dumps(record, allow_nan=True))
    return lines


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[tuple[asyncio.AbstractEventLoop, list[MemoryTransfer]]]:
    """One SQLite file and one PostgreSQL database for the whole run, on a private loop."""
    loop = asyncio.new_event_loop()
    path = Path(tmp_path_factory.mktemp("import-fuzz")) / "memory.db"
    db = loop.run_until_complete(open_database(path))
    loop.run_until_complete(apply_migrations(db))
    url = loop.run_until_complete(postgres_server.create_database())
    store = loop.run_until_complete(postgres.open_store(url, pool_max=2))
    yield (
        loop,
        [
            SqliteMemoryTransfer(SqliteSession(db), path, gap_s=0),
            PostgresMemoryTransfer(postgres.PostgresSession(store.pool)),
        ],
    )
    loop.run_until_complete(store.close())
    loop.run_until_complete(db.close())
    loop.run_until_complete(postgres_server.drop_database(url))
    loop.close()


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=hostile_files())
def test_a_hostile_line_is_refused_by_line_and_field_or_imported_on_both_backends(
    stores: tuple[asyncio.AbstractEventLoop, list[MemoryTransfer]], lines: list[str]
) -> None:
    loop, backends = stores
    try:
        parsed = parse_export(lines, schema_version=99, now=NOW)
    except InvalidInputError as exc:
        text = str(exc)
        assert text.startswith("line "), text
        # "line N: field: reason", or the header's own wording.
        assert ": " in text[len("line ") :], text
        return
    for backend in backends:
        loop.run_until_complete(import_records(backend, parsed, batch=2))


@pytest.mark.parametrize(
    ("kind", "changes", "field"),
    [
        ("memory", {"token_count": 2**70}, "token_count"),
        ("memory", {"access_count": 2**31}, "access_count"),
        ("memory", {"superseded_by": 2**63}, "superseded_by"),
        # Past what a JavaScript client reads exactly, and the id sequence could not go on.
        ("memory", {"id": 2**53}, "id"),
        ("document", {"id": 2**63 - 1}, "id"),
        ("document_chunk", {"document_id": 2**53}, "document_id"),
        ("document_revision", {"revision": 2**63 - 1}, "revision"),
        ("memory", {"created_at": "9999-12-31T23:59:59-23:59"}, "created_at"),
        ("memory", {"updated_at": "0001-01-01T00:00:00+23:59"}, "updated_at"),
        ("memory", {"occurred_at": "0001-01-01T00:00:00+23:59"}, "occurred_at"),
        ("memory", {"tags": ["\ud800"]}, "tags[0]"),
        ("memory_version", {"valid_until": "9999-12-31T23:59:59-23:59"}, "valid_until"),
        ("memory_version", {"metadata": {"n": math.inf}}, "metadata"),
        ("memory_version", {"tags": {"a": 1}}, "tags"),
        ("conversation_session", {"created_at": "0001-01-01T00:00:00+23:59"}, "created_at"),
        ("conversation_session", {"config": '{"recent_window": NaN}'}, "config"),
        ("tool_result", {"result": "Infinity"}, "result"),
        ("conversation_summary", {"entry_ids": "[" * 5000 + "]" * 5000}, "entry_ids"),
    ],
)
def test_the_known_overflows_are_refused_by_line_and_field(
    kind: str, changes: dict[str, Any], field: str
) -> None:
    lines = [json.dumps(HEADER)]
    parent = _PARENTS.get(kind)
    if parent is not None:
        lines.append(json.dumps({"kind": parent, **GOOD[parent]}))
    lines.append(json.dumps({"kind": kind, **GOOD[kind], **changes}, allow_nan=True))
    with pytest.raises(InvalidInputError) as info:
        parse_export(lines, schema_version=99, now=NOW)
    assert str(info.value).startswith(f"line {len(lines)}: {field}:"), str(info.value)
