"""RowReader.memory: the fast paths for enums and empty metadata decode as the slow ones did."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.domain.models import Layer, Tier
from memory_core.storage.postgres.rows import row_to_memory as pg_row_to_memory
from memory_core.storage.sqlite.rows import row_to_memory


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": 7,
        "project": "p",
        "layer": "semantic",
        "key": None,
        "content": "the deploy runs on Fridays",
        "metadata": "{}",
        "session_id": None,
        "created_at": "2026-03-01T12:00:00.000000Z",
        "updated_at": "2026-03-01T12:00:00.000000Z",
        "last_accessed": None,
        "access_count": 0,
        "memory_tier": "RECENT",
        "content_hash": "h",
        "token_count": 6,
        "author": None,
        "occurred_at": None,
        "dates": None,
        "pinned": 0,
        "superseded_by": None,
        "tags": "[]",
    }
    row.update(changes)
    return row


def test_every_layer_and_tier_decodes_to_its_member() -> None:
    for layer in Layer:
        for tier in Tier:
            m = row_to_memory(_row(layer=layer.value, memory_tier=tier.value))
            assert m.layer is layer
            assert m.tier is tier


@pytest.mark.parametrize(("column", "value"), [("layer", "cosmic"), ("memory_tier", "FROZEN")])
def test_an_unknown_stored_value_still_fails(column: str, value: str) -> None:
    with pytest.raises(ValueError, match=value):
        row_to_memory(_row(**{column: value}))


def test_empty_metadata_is_a_new_dict_for_every_row() -> None:
    a, b = row_to_memory(_row()), row_to_memory(_row(id=8))
    assert a.metadata == {} and b.metadata == {}
    a.metadata["x"] = 1  # a shared dict would show this in b
    assert b.metadata == {}


@pytest.mark.parametrize("text", ['{"source": "chat", "n": 2}', "{ }", '{"nested": {"a": [1, 2]}}'])
def test_other_metadata_is_parsed_as_json(text: str) -> None:
    assert row_to_memory(_row(metadata=text)).metadata == json.loads(text)


def test_postgres_rows_keep_their_decoded_metadata() -> None:
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    m = pg_row_to_memory(
        _row(metadata={"source": "chat"}, created_at=at, updated_at=at, layer="working")
    )
    assert m.metadata == {"source": "chat"}
    assert m.layer is Layer.WORKING
