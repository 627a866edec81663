"""Errors as a client sees them: the server's own wording, the right codes and advice."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from tests.mcp_client import call, error


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("search", {"query": 5}, "Invalid `query`: must be a string (got 5)"),
        ("search", {"query": "x", "limit": 1000}, "Invalid `limit`: must be at most 100"),
        (
            "search",
            {"query": "x", "mode": "fuzzy"},
            "Invalid `mode`: must be one of 'hybrid', 'keyword' or 'semantic' (got \"fuzzy\")",
        ),
        ("search", {}, "Invalid `query`: is required (or `queries`: 1-5 phrasings"),
        (
            "search",
            {"query": "x", "since": "yesterday"},
            "Invalid `since`: must be an ISO-8601 date-time",
        ),
        ("append", {"layer": "episodic", "content": "x", "metadata": "a"}, "must be a JSON object"),
        (
            "append_many",
            {"items": [{"layer": "bad", "content": "x"}]},
            "Invalid `items[0].layer`: must be one of 'working'",
        ),
        ("append_many", {"items": []}, "Invalid `items`: must have at least 1 items (got 0)"),
    ],
)
async def test_schema_errors_name_the_field_and_what_is_allowed(
    client: Client, tool: str, args: dict[str, object], expected: str
) -> None:
    msg = await error(client, tool, **args)
    assert expected in msg
    assert msg.endswith("and retry.")
    for pydantic_dump in ("validation error", "errors.pydantic.dev", "Arguments", "type="):
        assert pydantic_dump not in msg


async def test_several_schema_errors_are_listed_together(client: Client) -> None:
    msg = await error(client, "search", query=5, limit=0)
    assert "Invalid `query`" in msg and "Invalid `limit`: must be at least 1 (got 0)" in msg
    assert msg.endswith("Fix the arguments and retry.")


async def test_a_long_rejected_value_is_not_echoed_in_full(client: Client) -> None:
    msg = await error(client, "search", query="x", session_id=["y" * 500])
    assert "Invalid `session_id`: must be a string" in msg
    assert "y" * 60 not in msg and "..." in msg


async def test_unknown_arguments_are_refused_with_the_valid_names(client: Client) -> None:
    msg = await error(client, "search", query="x", limt=1)
    assert "Unknown argument `limt` (did you mean `limit`?) for `search`" in msg
    assert "It takes: query, queries, mode, layer, limit," in msg and msg.endswith(
        "Fix the names and retry."
    )
    # Nothing ran: an unknown argument is not silently dropped.
    msg = await error(client, "append", layer="episodic", content="kept?", projet="p")
    assert "`projet` (did you mean `project`?)" in msg
    found = await call(client, "search", query="kept", mode="keyword", project="p")
    assert found["hits"] == []


async def test_learn_names_value_when_it_is_too_long(client: Client) -> None:
    msg = await error(client, "learn", key="k", value="x" * 200_000)
    assert "Invalid `value`: must be at most" in msg and "`content`" not in msg
    assert "Invalid `value`: must not be empty" in await error(client, "learn", key="k", value=" ")


async def test_a_snapshot_id_that_is_not_a_number_is_invalid_not_missing(client: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource("memory://default/snapshot/abc")
    assert caught.value.code == INVALID_PARAMS
    assert "Invalid `memory_id`: must be a whole number" in caught.value.message
    assert "id 0" not in caught.value.message


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("start_task_with_memory", {}, "missing `task` (required). It takes: task, project."),
        (
            "nope",
            {},
            "No prompt `nope`. Prompts: memory_briefing, start_task_with_memory, "
            "record_what_we_learned",
        ),
        ("record_what_we_learned", {"task": "x"}, "unknown argument `task`. It takes: project."),
    ],
)
async def test_prompt_errors_are_invalid_params(
    client: Client, name: str, args: dict[str, str], expected: str
) -> None:
    with pytest.raises(MCPError) as caught:
        await client.get_prompt(name, args)
    assert caught.value.code == INVALID_PARAMS
    assert expected in caught.value.message


async def test_prompt_arguments_have_descriptions(client: Client) -> None:
    for prompt in (await client.list_prompts()).prompts:
        assert prompt.arguments
        for arg in prompt.arguments:
            assert arg.description, (prompt.name, arg.name)


async def test_the_default_projects_resources_are_listed_and_readable(client: Client) -> None:
    listed = (await client.list_resources()).resources
    assert [str(r.uri) for r in listed] == ["memory://test/stats", "memory://test/context"]
    assert all(r.description and r.mime_type == "application/json" for r in listed)
    for r in listed:
        read = await client.read_resource(str(r.uri))
        assert read.contents[0].text.startswith("{")  # type: ignore[union-attr]


async def test_submit_summary_without_a_request_says_what_to_do(client: Client) -> None:
    await call(client, "start_session", session_id="s1")
    msg = await error(client, "submit_session_summary", session_id="s1", summary="a summary")
    assert "no summary was requested" in msg and "Call compress_session first" in msg
    assert "Re-read" not in msg


async def test_importing_onto_an_existing_session_says_what_to_do(client: Client) -> None:
    await call(client, "start_session", session_id="s1")
    data = await call(client, "export_session", session_id="s1")
    msg = await error(client, "import_session", data=data)
    assert "already exists" in msg and "under another session_id" in msg
    assert "Re-read" not in msg


async def test_a_write_that_creates_a_project_says_so(client: Client) -> None:
    first = await client.call_tool(
        "append", {"layer": "episodic", "content": "a", "project": "wrok"}
    )
    assert first.structured_content is not None and first.structured_content["new_project"]
    assert "new project 'wrok' created" in first.content[0].text  # type: ignore[union-attr]
    again = await client.call_tool(
        "append", {"layer": "episodic", "content": "b", "project": "wrok"}
    )
    assert again.structured_content is not None and "new_project" not in again.structured_content
    assert "new project" not in again.content[0].text  # type: ignore[union-attr]
    learned = await client.call_tool("learn", {"key": "k", "value": "v", "project": "fresh"})
    assert learned.structured_content is not None and learned.structured_content["new_project"]
    assert "new project 'fresh' created" in learned.content[0].text  # type: ignore[union-attr]
    batch = await client.call_tool(
        "append_many", {"items": [{"layer": "episodic", "content": "c"}], "project": "bulk"}
    )
    assert batch.structured_content is not None and batch.structured_content["new_project"]
    text = batch.content[0].text  # type: ignore[union-attr]
    assert text.count("new project 'bulk'") == 1


async def test_the_default_projects_first_write_is_not_flagged(client: Client) -> None:
    first = await client.call_tool("append", {"layer": "episodic", "content": "a"})
    assert first.structured_content is not None and "new_project" not in first.structured_content
    assert "new project" not in first.content[0].text  # type: ignore[union-attr]
