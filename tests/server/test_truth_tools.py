"""The curation tools and the truth parameters of the core tools, over MCP (both backends)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from server.settings import Settings
from tests.mcp_client import call, error


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    if request.param == "sqlite":
        return settings
    return settings.model_copy(update={"database_url": request.getfixturevalue("pg_url")})


async def _text(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


async def test_update_history_pin_list_and_forget_where(client: Client) -> None:
    first = await call(client, "append", layer="episodic", content="Deploys go to Fly.io")
    again = await call(client, "append", layer="episodic", content="deploys go to fly.io!")
    assert (again["status"], again["id"]) == ("duplicate", first["id"])
    mid = first["id"]

    updated = await call(client, "update", id=mid, content="Deploys go to AWS", tags=["deploy"])
    assert updated["status"] == "updated" and updated["changed"] == ["content", "tags"]
    assert updated["previous_content"] == "Deploys go to Fly.io"
    text = await _text(client, "history", id=mid)
    assert "Deploys go to AWS" in text and "Deploys go to Fly.io" in text

    pinned = await call(client, "pin", ids=[mid, 999_999])
    assert pinned["ids"] == [mid] and pinned["missing"] == [999_999]
    for n in range(3):
        await call(client, "append", layer="episodic", content=f"release note {n}")
    page = await call(client, "list_memories", limit=2)
    assert len(page["memories"]) == 2 and "next_cursor" in page
    rest = await call(client, "list_memories", limit=10, before_id=page["next_cursor"])
    assert [m["id"] for m in rest["memories"]][-1] == mid
    assert rest["memories"][-1]["pinned"] is True
    tagged = await call(client, "list_memories", tags=["deploy"])
    assert [m["id"] for m in tagged["memories"]] == [mid]

    preview = await call(client, "forget_where", tags=["deploy"])
    assert preview["dry_run"] is True and preview["count"] == 1
    receipt = await call(client, "forget_where", tags=["deploy"], dry_run=False)
    assert receipt["count"] == 1 and set(receipt["remaining"].values()) == {0}
    assert receipt["removed"]["versions"] == 1
    assert "required" in await error(client, "forget_where")
    assert "forgot 1 memories" in await _text(
        client, "forget_where", ids=[page["memories"][0]["id"]], dry_run=False
    )


async def test_append_supersedes_and_search_hides_history_unless_asked(client: Client) -> None:
    old = await call(client, "append", layer="episodic", content="The deploy target is Fly.io")
    new = await call(
        client,
        "append",
        layer="episodic",
        content="The deploy target moved to AWS",
        supersedes=[old["id"]],
        tags=["deploy"],
    )
    hits = await call(client, "search", query="deploy target", mode="keyword")
    assert [h["id"] for h in hits["hits"]] == [new["id"]]
    assert hits["hits"][0]["tags"] == ["deploy"]
    every = await call(
        client, "search", query="deploy target", mode="keyword", include_superseded=True
    )
    old_hit = next(h for h in every["hits"] if h["id"] == old["id"])
    assert old_hit["superseded_by"] == new["id"]
    text = await _text(
        client, "search", query="deploy target", mode="keyword", include_superseded=True
    )
    assert f"(superseded by #{new['id']})" in text
    tagged = await call(client, "search", query="deploy", mode="keyword", tags=["deploy"])
    assert [h["id"] for h in tagged["hits"]] == [new["id"]]
    loaded = await call(client, "load_context", layer="episodic")
    assert [i["id"] for i in loaded["items"]] == [new["id"]]


async def test_stats_count_pins_and_superseded_memories(client: Client) -> None:
    old = await call(client, "append", layer="episodic", content="the build uses make")
    new = await call(
        client, "append", layer="episodic", content="the build uses just", supersedes=[old["id"]]
    )
    await call(client, "pin", ids=[new["id"]])
    stats = await call(client, "get_memory_stats")
    assert (stats["total"], stats["pinned"], stats["superseded"]) == (2, 1, 1)
    assert "1 pinned, 1 superseded" in await _text(client, "get_memory_stats")


async def test_append_many_items_take_tags_and_supersedes(client: Client) -> None:
    old = await call(client, "append", layer="episodic", content="Releases ship on Tuesdays")
    done = await call(
        client,
        "append_many",
        items=[
            {
                "layer": "episodic",
                "content": "Releases ship on Thursdays",
                "tags": ["release"],
                "supersedes": [old["id"]],
            },
            {"layer": "episodic", "content": "releases ship on thursdays!"},
        ],
    )
    first, second = done["results"]
    assert second["status"] == "duplicate" and second["id"] == first["id"]
    listed = await call(client, "list_memories", tags=["release"])
    assert [m["id"] for m in listed["memories"]] == [first["id"]]
    hits = await call(client, "search", query="releases ship", mode="keyword")
    assert [h["id"] for h in hits["hits"]] == [first["id"]]
