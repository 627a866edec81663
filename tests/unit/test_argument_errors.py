"""Pydantic's validation errors told as "Invalid `field`: what is allowed (got what was sent)"."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from server.protocol.argument_errors import describe_validation_error, unknown_arguments_message


class Item(BaseModel):
    layer: Literal["a", "b"]


class Args(BaseModel):
    query: str
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    tags: Annotated[list[str], Field(max_length=2)] = []
    name: Annotated[str, Field(max_length=5)] = "x"
    items: list[Item] = []
    ratio: float = 0.5
    flag: bool = False


def told(**kwargs: object) -> str:
    with pytest.raises(ValidationError) as caught:
        Args.model_validate(kwargs)
    return describe_validation_error(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "Missing `query`: it is required. Fix the argument and retry."),
        ({"query": 1}, "Invalid `query`: must be a string (got 1)."),
        ({"query": "q", "limit": 0}, "Invalid `limit`: must be at least 1 (got 0)."),
        ({"query": "q", "limit": "many"}, 'Invalid `limit`: must be an integer (got "many").'),
        (
            {"query": "q", "tags": ["a", "b", "c"]},
            "Invalid `tags`: must have at most 2 items (got 3).",
        ),
        (
            {"query": "q", "name": "toolong"},
            "Invalid `name`: must be at most 5 characters (got 7).",
        ),
        (
            {"query": "q", "items": [{"layer": "c"}]},
            "Invalid `items[0].layer`: must be one of 'a' or 'b'",
        ),
        ({"query": "q", "ratio": "x"}, "Invalid `ratio`: must be a number"),
        ({"query": "q", "flag": "maybe"}, "Invalid `flag`: must be true or false"),
    ],
)
def test_each_kind_of_error_says_what_is_allowed(kwargs: dict[str, object], expected: str) -> None:
    assert expected in told(**kwargs)


def test_many_errors_list_the_first_three_and_count_the_rest() -> None:
    msg = told(query=1, limit=0, name="toolong", ratio="x", flag="maybe")
    assert msg.count("Invalid `") == 3 and "and 2 more" in msg
    assert msg.endswith("Fix the arguments and retry.")


def test_unknown_arguments_suggest_the_closest_name() -> None:
    msg = unknown_arguments_message("search", {"limt", "zzz"}, ["query", "limit"])
    assert msg == (
        "Unknown arguments `limt` (did you mean `limit`?), `zzz` for `search`. "
        "It takes: query, limit. Fix the names and retry."
    )
    assert "It takes: none." in unknown_arguments_message("t", {"a"}, [])
