"""An export file is checked with the tools' own limits before anything is imported."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.config.policies import Limits
from memory_core.domain.inputs import check_metadata, check_project
from memory_core.errors import InvalidInputError
from memory_core.services.transfer import parse_export

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
HEADER = {
    "format": "memstrata-export",
    "format_version": 1,
    "schema_version": 1,
    "exported_at": "2026-11-23T11:00:00+00:00",
    "project": None,
}


def record(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": 1,
        "project": "work",
        "layer": "episodic",
        "key": None,
        "content": "Deployed v1.2",
        "metadata": {},
        "session_id": None,
        "created_at": "2026-11-20T10:00:00+00:00",
        "updated_at": "2026-11-20T10:00:00+00:00",
        "last_accessed": "2026-11-21T10:00:00+00:00",
        "access_count": 2,
        "memory_tier": "RECENT",
        "content_hash": "x",
        "token_count": 3,
    }
    return {**base, **changes}


def parse(*records: dict[str, Any] | str) -> Any:
    lines = [json.dumps(HEADER)]
    lines += [r if isinstance(r, str) else json.dumps(r) for r in records]
    return parse_export(lines, schema_version=5, now=NOW)


def test_a_good_record_is_accepted() -> None:
    assert parse(record()).memories[0].content == "Deployed v1.2"


def test_a_record_may_carry_an_author_or_none() -> None:
    both = parse(record(author="Ada Lovelace"), record(id=2, content="other")).memories
    assert [m.author for m in both] == ["Ada Lovelace", None]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"id": 2**63}, "id"),
        ({"id": 0}, "id"),
        ({"key": "a\x00b", "layer": "semantic"}, "key"),
        ({"session_id": "s" * 5000}, "session_id"),
        ({"last_accessed": "9999-12-31T00:00:00+00:00"}, "last_accessed"),
        ({"created_at": "1900-01-01T00:00:00+00:00"}, "created_at"),
        ({"access_count": -1}, "access_count"),
        ({"project": "work\n"}, "project"),
        ({"author": "Ada\nLovelace"}, "author"),
        ({"author": " Ada"}, "author"),
        ({"author": "x" * 101}, "author"),
        ({"content": "x" * 2_000_000}, "content"),
        (
            {"metadata": {"deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}},
            "metadata",
        ),
    ],
)
def test_hostile_records_name_their_line_and_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse(record(**changes))
    assert info.value.field == "line 2" and info.value.reason.startswith(field)


def test_nan_in_metadata_is_a_clear_error_not_a_storage_failure() -> None:
    line = json.dumps(record(metadata={"x": float("nan")}))  # Python writes a bare NaN
    assert "NaN" in line
    with pytest.raises(InvalidInputError, match="NaN"):
        parse(line)
    with pytest.raises(InvalidInputError, match="NaN or Infinity"):
        check_metadata({"x": float("inf")}, Limits())


def test_every_bad_line_is_listed_in_one_error() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse(record(), record(id=-5), "not json", record(project="a b"))
    assert info.value.field == "file"
    reason = info.value.reason
    assert reason.startswith("3 bad lines, nothing imported")
    assert (
        "line 3: id" in reason and "line 4: is not JSON" in reason and "line 5: project" in reason
    )


def test_a_project_name_may_not_end_in_a_newline() -> None:
    assert check_project("work") == "work"
    with pytest.raises(InvalidInputError):
        check_project("work\n")
