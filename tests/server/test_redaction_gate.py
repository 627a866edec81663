"""The redaction gate on every store, both backends: no credential is stored, each is counted.

Each write goes through the tools (the in-memory MCP client); every stored thing is then read
back through the tools, and on SQLite the database file's bytes are searched too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from server.settings import Settings
from tests.backends import settings_on
from tests.mcp_client import call, hosted

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_ID_2 = "AKIAI44QH8DHBEXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2" * 9
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
URL_PASSWORD = "p@ss/w0rd"
HUNTER = "hunter2xyz"
SECRETS = (AWS_ID, AWS_ID_2, AWS_SECRET, GITHUB, STRIPE, URL_PASSWORD, HUNTER, "s3cr3tPlainWords")


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


def _no_secret(where: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} stored in {where}"


async def _write_everything(client: Client) -> dict[str, dict[str, int]]:
    """One write per store and field; returns each answer's `redacted`."""
    out: dict[str, dict[str, int]] = {}
    appended = await call(
        client,
        "append",
        layer="episodic",
        content=f"aws sts output: {AWS_ID}",
        metadata={
            "aws_secret_access_key": "s3cr3tPlainWords",
            f"key {GITHUB}": "value",
            "db": f"postgres://app:{URL_PASSWORD}@db.internal/app",
        },
    )
    out["append"] = appended["redacted"]
    first = await call(client, "learn", key=f"deploy {AWS_ID}", value="first account")
    second = await call(client, "learn", key=f"deploy {AWS_ID_2}", value="second account")
    out["learn"] = first["redacted"]
    # Two secrets used as keys stay two facts: the second does not overwrite the first.
    assert first["id"] != second["id"] and second["status"] == "created"
    recalled = await call(client, "recall", key=f"deploy {AWS_ID}")
    assert recalled["value"] == "first account"
    out["scratchpad"] = (
        await call(client, "scratchpad_write", session_id="s1", snippet=f"PASSWORD={HUNTER}")
    )["redacted"]
    out["preferences"] = (
        await call(client, "preferences_update", user="u1", key=f"token {GITHUB}", value=STRIPE)
    )["redacted"]
    out["playbook"] = (
        await call(
            client,
            "playbook_record",
            user="u1",
            flow="deploy",
            slots={"password": HUNTER, "region": "eu"},
            tool_calls=[{"name": "login", "args": {"token": GITHUB}}],
            outcome=f"logged in with {STRIPE}",
            user_query=f"deploy with {AWS_ID}",
        )
    )["redacted"]
    out["document"] = (
        await call(
            client,
            "ingest_document",
            tenant="t1",
            source=f"notes {AWS_ID}.md",
            text=f'config:\n  "password": "{HUNTER}"\n  aws_secret_access_key = {AWS_SECRET}\n',
        )
    )["redacted"]
    out["agent_md"] = (
        await call(
            client,
            "seed_tenant_from_agent_md",
            tenant="t1",
            text=f"# Deploy\nUse {GITHUB} to push.\n\n# Billing\nStripe key {STRIPE}.\n",
        )
    )["redacted"]
    await call(client, "start_session", session_id="c1")
    out["entry_source"] = (
        await call(
            client,
            "add_session_entry",
            session_id="c1",
            type="context",
            content="the config file",
            source=f"https://ci:{URL_PASSWORD}@git.example/repo",
        )
    )["redacted"]
    out["entry_tool"] = (
        await call(
            client,
            "add_session_entry",
            session_id="c1",
            type="tool_call",
            tool_name=f"run {GITHUB}",
            arguments={"api_key": "s3cr3tPlainWords", GITHUB: 1},
        )
    )["redacted"]
    exported = await call(client, "export_session", session_id="c1")
    raw = json.loads(json.dumps(exported))
    raw["entries"][0]["source"] = f"redis://:{HUNTER}@cache/0"
    raw["entries"][1]["tool_name"] = f"call {STRIPE}"
    raw["entries"][1]["content"] = f"with {AWS_ID}"
    out["import_session"] = (await call(client, "import_session", data=raw, session_id="c2"))[
        "redacted"
    ]
    return out


async def test_every_store_redacts_and_says_so(settings: Settings):
    async with hosted(settings) as client:
        redacted = await _write_everything(client)
        assert redacted == {
            "append": {
                "aws_access_key": 1,
                "github_token": 1,
                "secret_value": 1,
                "url_password": 1,
            },
            "learn": {"aws_access_key": 1},
            "scratchpad": {"password": 1},
            "preferences": {"github_token": 1, "stripe_key": 1},
            "playbook": {"aws_access_key": 1, "github_token": 1, "password": 1, "stripe_key": 1},
            "document": {"aws_access_key": 1, "aws_secret_key": 1, "password": 1},
            "agent_md": {"github_token": 1, "stripe_key": 1},
            "entry_source": {"url_password": 1},
            "entry_tool": {"github_token": 2, "secret_value": 1},
            # The exported arguments were redacted when stored; these are the edited fields.
            "import_session": {"aws_access_key": 1, "stripe_key": 1, "url_password": 1},
        }
        # Everything stored, read back through the tools.
        for name, args in (
            ("search", {"query": "aws sts output"}),
            ("load_context", {}),
            ("scratchpad_read", {"session_id": "s1"}),
            ("preferences_list", {"user": "u1"}),
            ("list_documents", {"tenant": "t1"}),
            ("search_business_context", {"tenant": "t1", "query": "config password deploy"}),
            ("export_session", {"session_id": "c1"}),
            ("export_session", {"session_id": "c2"}),
        ):
            _no_secret(name, await call(client, name, **args))
    if settings.database_url is None:
        for path in Path(settings.db).parent.glob(Path(settings.db).name + "*"):
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret!r} in {path.name}"


async def test_preference_keys_holding_secrets_stay_distinct_and_are_found_again(
    settings: Settings,
):
    async with hosted(settings) as client:
        await call(client, "preferences_update", user="u", key=f"use {AWS_ID}", value="one")
        await call(client, "preferences_update", user="u", key=f"use {AWS_ID_2}", value="two")
        got = await call(client, "preferences_get", user="u", key=f"use {AWS_ID}")
        listed = await call(client, "preferences_list", user="u")
    assert got["preference"]["value"] == "one"
    assert len(listed["rules"]) == 2
    _no_secret("preferences", listed)
