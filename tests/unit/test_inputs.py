from datetime import UTC, datetime

import pytest

from memory_core.config.policies import Limits
from memory_core.domain.inputs import (
    check_key,
    check_limit,
    check_metadata,
    check_project,
    check_text,
    check_time_range,
)
from memory_core.errors import InvalidInputError

LIMITS = Limits(max_content_chars=10, max_metadata_bytes=40, max_limit=20)


@pytest.mark.parametrize("name", ["default", "conv-26", "team/app@v2", "a.b:c_d"])
def test_check_project_accepts_plain_names(name: str) -> None:
    assert check_project(name) == name


@pytest.mark.parametrize("name", ["", "-x", "has space", "x" * 129, "semi;colon", "🎉"])
def test_check_project_rejects_names_and_says_what_is_allowed(name: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        check_project(name)
    assert info.value.field == "project"
    assert "letters, digits" in info.value.reason


def test_check_text_strips_and_bounds() -> None:
    assert check_text("content", "  hi  ", max_chars=10) == "hi"
    with pytest.raises(InvalidInputError, match="at most 10 characters"):
        check_text("content", "x" * 11, max_chars=10)
    with pytest.raises(InvalidInputError, match="must not be empty"):
        check_text("content", " \n\t", max_chars=10)
    with pytest.raises(InvalidInputError, match="NUL"):
        check_text("content", "a\x00b", max_chars=10)


def test_check_key_is_required() -> None:
    with pytest.raises(InvalidInputError) as info:
        check_key("key", None, LIMITS)
    assert info.value.field == "key"


def test_check_metadata_bounds_size_and_depth() -> None:
    assert check_metadata(None, LIMITS) == {}
    with pytest.raises(InvalidInputError, match="at most 40 bytes"):
        check_metadata({"k": "x" * 50}, LIMITS)
    deep: dict[str, object] = {}
    node = deep
    for _ in range(9):
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    with pytest.raises(InvalidInputError, match="nest at most"):
        check_metadata(deep, Limits())  # type: ignore[arg-type]


def test_check_limit_names_the_range() -> None:
    assert check_limit("limit", 20, LIMITS) == 20
    with pytest.raises(InvalidInputError, match="between 1 and 20"):
        check_limit("limit", 21, LIMITS)


def test_time_range_takes_naive_as_utc_and_orders() -> None:
    since, until = check_time_range(datetime(2026, 1, 1), None)
    assert since == datetime(2026, 1, 1, tzinfo=UTC)
    assert until is None
    with pytest.raises(InvalidInputError) as info:
        check_time_range(datetime(2026, 2, 1), datetime(2026, 1, 1))
    assert info.value.field == "until"
