"""Resources and prompts through the in-memory MCP client."""

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError


async def read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    text = result.contents[0].text  # type: ignore[union-attr]
    return json.loads(text)


async def test_resource_templates_are_listed(client: Client) -> None:
    templates = {
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    }
    assert templates == {
        "memory://{project}/stats",
        "memory://{project}/context",
        "memory://{project}/snapshot/{memory_id}",
        "memory://{project}/session/{session_id}",
    }


async def test_stats_context_and_snapshot_resources(client: Client) -> None:
    stored = await client.call_tool(
        "append", {"layer": "episodic", "content": "resource check", "project": "res"}
    )
    memory_id = stored.structured_content["id"]
    stats = await read(client, "memory://res/stats")
    assert stats["total"] == 1 and stats["by_layer"]["episodic"] == 1
    context = await read(client, "memory://res/context")
    assert [i["content"] for i in context["items"]] == ["resource check"]
    snapshot = await read(client, f"memory://res/snapshot/{memory_id}")
    assert snapshot["content"] == "resource check"
    assert snapshot["access_count"] == 2  # the context read, then this one


@pytest.mark.parametrize(
    "uri",
    ["memory://res/snapshot/999", "memory://other/snapshot/1"],
)
async def test_a_missing_snapshot_is_not_found(client: Client, uri: str) -> None:
    await client.call_tool("append", {"layer": "episodic", "content": "x", "project": "res"})
    with pytest.raises(MCPError, match="No memory with id"):
        await client.read_resource(uri)


async def test_a_bad_project_in_a_resource_is_explained(client: Client) -> None:
    with pytest.raises(MCPError, match="Invalid `project`"):
        await client.read_resource("memory://-bad/stats")


async def test_prompts_name_the_project_and_the_task(client: Client) -> None:
    names = {p.name for p in (await client.list_prompts()).prompts}
    assert names == {"start_task_with_memory", "record_what_we_learned", "memory_briefing"}
    start = await client.get_prompt(
        "start_task_with_memory", {"task": "fix the login bug", "project": "web"}
    )
    text = start.messages[0].content.text  # type: ignore[union-attr]
    assert "load_context" in text and "'web'" in text and text.endswith("fix the login bug")
    record = await client.get_prompt("record_what_we_learned", {})
    assert "'test'" in record.messages[0].content.text  # type: ignore[union-attr]
