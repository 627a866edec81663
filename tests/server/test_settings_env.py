"""`Settings` reads MEMSTRATA_* exactly as pydantic-settings would, without importing it.

The reader in server/settings.py replaces pydantic-settings on every path (it cost ~60-100 ms
of each cold process). pydantic-settings stays the reference here: a BaseSettings class over
the same fields (`SettingsFields`, the one declaration) is built on many environments, generated
and tabled, and both must give the same settings, the same fields set, or the same errors.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, Literal
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as ReferenceSettingsError

from server.settings import Settings, SettingsError, SettingsFields, describe_settings_error


class Reference(BaseSettings, SettingsFields):
    """What `Settings` was before: pydantic-settings over the same fields."""

    model_config = SettingsConfigDict(
        env_prefix="MEMSTRATA_", env_nested_delimiter="__", extra="ignore", frozen=True
    )


def _groups() -> dict[str, type[BaseModel]]:
    out = {}
    for name, field in SettingsFields.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out[name] = field.annotation
    return out


GROUPS = _groups()
TOP = list(SettingsFields.model_fields)
NESTED = [f"{group}__{field}" for group, model in GROUPS.items() for field in model.model_fields]
ODD = [
    "unknown",
    "tiers__no_such_field",
    "tiers__active_hours__deeper",
    "redaction__memstrata_kinds",  # a nested segment may carry the prefix (pydantic-settings)
    "hooks__",
    "conversation__nope",  # ConversationPolicy forbids extra fields
    "db__x",
]

VALUES = [
    "",
    "0",
    "1",
    "-1",
    "2.5",
    "1e3",
    "true",
    "no",
    "null",
    "none",
    "DEBUG",
    "console",
    "git",
    "convex",
    "all",
    "core,maintenance",
    "core,bogus",
    "/tmp/memstrata-x.db",
    "postgresql://ann:s3cret-pw@db:5432/mem",
    "mysql://ann:s3cret-pw@db/mem",
    "http://127.0.0.1:9/v1",
    "0 0 * * *",
    "every sunday",
    "st:all-mpnet-base-v2",
    '{"active_hours": 3}',
    '{"ACTIVE_HOURS": "x", "Recent_Hours": 30}',
    '{"prompt_max_hits": 3, "timeout": 0}',
    '{"kinds": ["jwt", "password"]}',
    '{"enabled": false}',
    '{"nope": 1}',
    "[1, 2]",
    '["jwt"]',
    '["not-a-kind"]',
    '"a string"',
    "{not json",
    '{"unterminated": "s3cret-pw',
]


def _spellings(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name.upper(), name.lower(), name.title(), name.swapcase()])


_key = st.one_of(
    st.sampled_from(TOP + NESTED + ODD).flatmap(
        lambda name: st.tuples(_spellings("memstrata_"), _spellings(name)).map("".join)
    ),
    st.sampled_from(["OTHER_DB", "MEMSTRATA", "XMEMSTRATA_DB"]),
)
_value = st.one_of(
    st.sampled_from(VALUES),
    st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=8),
)


def _outcome(build: typing.Callable[[], SettingsFields]) -> tuple[Any, ...]:
    try:
        built = build()
    except (SettingsError, ReferenceSettingsError):
        return ("unreadable",)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        return ("invalid", [(e["type"], e["loc"], e["msg"], repr(e["input"])) for e in errors])
    return ("ok", built.model_dump(), sorted(built.model_fields_set))


def _both(env: dict[str, str], **values: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    with mock.patch.dict(os.environ, env, clear=True):
        return _outcome(lambda: Settings(**values)), _outcome(lambda: Reference(**values))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_key, _value, max_size=6))
def test_any_environment_reads_as_pydantic_settings_reads_it(env: dict[str, str]) -> None:
    ours, reference = _both(env)
    assert ours == reference


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"MEMSTRATA_DB": "/tmp/a.db", "MEMSTRATA_PROJECT": "shop", "MEMSTRATA_LOG_LEVEL": "INFO"},
        {"memstrata_project": "lower", "MEMSTRATA_HTTP_PORT": "8080"},
        # a group as JSON, its `__` variables merged in and winning; keys matched by case
        {
            "MEMSTRATA_TIERS": '{"Active_Hours": 3, "archived_days": 9}',
            "MEMSTRATA_TIERS__ARCHIVED_DAYS": "4",
        },
        # the hooks' nested settings, as a plugin sets them
        {
            "MEMSTRATA_HOOKS__SESSION_START": "false",
            "MEMSTRATA_HOOKS__PROMPT_SEMANTIC_WAIT": "1.5",
            "MEMSTRATA_HOOKS__USER_ID": "ann",
            "MEMSTRATA_HOOKS__START_TOKENS": "1200",
        },
        {"MEMSTRATA_HOOKS": '{"timeout": 2}', "MEMSTRATA_HOOKS__RECORD_TIMEOUT": "9"},
        {"MEMSTRATA_HOOKS__START_TOKENS": "99999"},  # out of range
        {"MEMSTRATA_HOOKS__TIMEOUT": "soon"},
        {"MEMSTRATA_REDACTION__KINDS": '["jwt", "password"]'},
        {"MEMSTRATA_REDACTION__KINDS": "jwt"},  # not JSON: unreadable
        {"MEMSTRATA_REDACTION__KINDS": ""},
        {"MEMSTRATA_SCHEDULE__PRUNE_CRON": "", "MEMSTRATA_SCHEDULE__ENABLED": "off"},
        {"MEMSTRATA_SCHEDULE__RECALCULATE_CRON": "0 0 * * 9"},
        {"MEMSTRATA_CONVERSATION__NOT_A_FIELD": "1"},  # forbidden extra in that group
        {"MEMSTRATA_TIERS": "null", "MEMSTRATA_RANKING": "[]"},
        {"MEMSTRATA_DATABASE_URL": "postgresql://ann:s3cret-pw@db:5432/mem?sslmode=require"},
        {"MEMSTRATA_DATABASE_URL": "mysql://ann:s3cret-pw@db/mem"},
        {"MEMSTRATA_SUMMARIZER_URL": "http://x/v1", "MEMSTRATA_SUMMARIZER_API_KEY": "s3cret-pw"},
        {"MEMSTRATA_TOOLSETS": "core,bogus", "MEMSTRATA_EMBEDDING_MODEL": "nope"},
        {"MEMSTRATA_AUTH_TOKENS_FILE": "/run/tokens.json", "MEMSTRATA_PROJECT_SCOPE": "GIT"},
        {"MEMSTRATA_DB": "/tmp/a.db", "memstrata_db": "/tmp/b.db"},  # the last spelling wins
    ],
)
def test_tabled_environments_read_as_pydantic_settings_reads_them(env: dict[str, str]) -> None:
    ours, reference = _both(env)
    assert ours == reference


@pytest.mark.parametrize(
    "values",
    [
        {"db": Path("/tmp/given.db")},
        {"tiers": {"active_hours": 2}},  # merged with MEMSTRATA_TIERS__* of the environment
        {"tiers": {"ACTIVE_HOURS": 2}},
        {"project": "given", "log_level": "DEBUG"},
    ],
)
def test_values_given_in_code_win_over_the_environment(values: dict[str, Any]) -> None:
    env = {
        "MEMSTRATA_DB": "/tmp/env.db",
        "MEMSTRATA_PROJECT": "env",
        "MEMSTRATA_TIERS__ARCHIVED_DAYS": "5",
        "MEMSTRATA_TIERS__ACTIVE_HOURS": "7",
    }
    ours, reference = _both(env, **values)
    assert ours == reference and ours[0] == "ok"


@pytest.mark.parametrize(
    "env",
    [
        {"MEMSTRATA_DATABASE_URL": "mysql://ann:s3cret-pw@db/mem"},
        {"MEMSTRATA_DATABASE_URL": "postgresql://ann:s3cret-pw@db/mem", "MEMSTRATA_TIERS": "{"},
        {"MEMSTRATA_TIERS": '{"active_hours": "s3cret-pw"}'},
        {"MEMSTRATA_TIERS": '{"active_hours": "s3cret-pw'},
        {"MEMSTRATA_REDACTION__KINDS": "s3cret-pw"},
        {"MEMSTRATA_SUMMARIZER_API_KEY": "s3cret-pw", "MEMSTRATA_SUMMARIZER_URL": "http://x/v1"},
    ],
)
def test_errors_name_the_variable_and_never_echo_its_value(env: dict[str, str]) -> None:
    with mock.patch.dict(os.environ, env, clear=True):
        try:
            Settings()
        except (SettingsError, ValidationError) as exc:
            text = describe_settings_error(exc)
        else:
            pytest.fail("the environment was accepted")
    assert "MEMSTRATA_" in text and "s3cret-pw" not in text


def _kinds(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [k for arg in typing.get_args(annotation) for k in _kinds(arg)]
    return [annotation]


def test_every_field_has_a_type_the_reader_handles() -> None:
    """The reader implements pydantic-settings' rules for the kinds of field used today.

    A new kind (an alias, a union of a collection and a scalar, a dict or numeric Literal, a
    strict type) needs the reader extended, and the generated environments above extended.
    """
    simple = (str, int, float, bool, Path, SecretStr, type(None))

    def check(model: type[BaseModel], nested: bool) -> None:
        for name, field in model.model_fields.items():
            assert field.alias is None and field.validation_alias is None, name
            for kind in _kinds(field.annotation):
                if isinstance(kind, type) and issubclass(kind, BaseModel):
                    assert not nested, f"{name}: a group inside a group"
                    check(kind, nested=True)
                elif typing.get_origin(kind) is Literal:
                    assert all(isinstance(v, str) for v in typing.get_args(kind)), name
                elif typing.get_origin(kind) is tuple:
                    assert len(_kinds(field.annotation)) == 1, f"{name}: a union with a tuple"
                else:
                    assert kind in simple, f"{name}: {kind}"

    check(SettingsFields, nested=False)
    assert not SettingsFields.model_config.get("strict")
