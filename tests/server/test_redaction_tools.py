from __future__ import annotations

import asyncio
from pathlib import Path

from mcp import Client

from memory_core.domain.redaction import RedactionPolicy
from server.app import build_server
from server.settings import ScheduleSettings, Settings

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2" * 9


async def test_append_redacts_content_and_metadata_and_says_what(client: Client):
    result = await client.call_tool(
        "append",
        {
            "layer": "episodic",
            "content": f"Deploy used {AWS} and https://ci:hunter22@git.example/repo",
            "metadata": {"env": {"GH": GITHUB}, "count": 2},
        },
    )
    assert not result.is_error
    out = result.structured_content
    assert out is not None
    assert out["redacted"] == {"aws_access_key": 1, "github_token": 1, "url_password": 1}
    text = str(result.content) + str(out)
    for secret in (AWS, GITHUB, "hunter22"):
        assert secret not in text

    found = await client.call_tool("search", {"query": "Deploy"})
    assert found.structured_content is not None
    hit = found.structured_content["hits"][0]
    assert hit["content"] == (
        "Deploy used [REDACTED:aws_access_key] and "
        "https://ci:[REDACTED:url_password]@git.example/repo"
    )
    assert hit["metadata"] == {"env": {"GH": "[REDACTED:github_token]"}, "count": 2}


async def test_learn_redacts_the_value_and_a_clean_append_reports_nothing(client: Client):
    learned = await client.call_tool("learn", {"key": "deploy.key", "value": f"it is {GITHUB}"})
    assert learned.structured_content is not None
    assert learned.structured_content["redacted"] == {"github_token": 1}
    recalled = await client.call_tool("recall", {"key": "deploy.key"})
    assert recalled.structured_content is not None
    assert recalled.structured_content["value"] == "it is [REDACTED:github_token]"

    clean = await client.call_tool("append", {"layer": "episodic", "content": "nothing secret"})
    assert clean.structured_content is not None
    assert "redacted" not in clean.structured_content  # nothing redacted: the default, {}


async def test_redaction_can_be_turned_off(tmp_path: Path):
    config = Settings(
        db=tmp_path / "m.db",
        schedule=ScheduleSettings(enabled=False),
        embedding_model="none",
        redaction=RedactionPolicy(enabled=False),
    )

    async def run() -> dict[str, object]:
        async with Client(build_server(config)) as client:
            result = await client.call_tool("learn", {"key": "k", "value": f"raw {AWS}"})
            recalled = await client.call_tool("recall", {"key": "k"})
        assert result.structured_content is not None and recalled.structured_content is not None
        redacted = result.structured_content.get("redacted", {})
        return {"redacted": redacted, **recalled.structured_content}

    out = await asyncio.create_task(run())
    assert out["redacted"] == {}
    assert out["value"] == f"raw {AWS}"


def test_settings_read_the_redaction_policy_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_REDACTION__ENABLED", "false")
    monkeypatch.setenv("MEMSTRATA_REDACTION__KINDS", '["jwt", "url_password"]')
    policy = Settings().redaction
    assert policy.enabled is False
    assert policy.kinds == ("jwt", "url_password")
