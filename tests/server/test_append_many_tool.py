"""The append_many tool: several memories in one call, all or nothing."""

from mcp import Client

from tests.mcp_client import call, error


async def test_append_many_stores_every_item_in_order(client: Client) -> None:
    out = await call(
        client,
        "append_many",
        items=[
            {"layer": "episodic", "content": "deployed the billing service"},
            {"layer": "semantic", "content": "Dutch", "key": "user.language"},
            {"layer": "episodic", "content": "deployed the billing service"},
        ],
    )
    assert out["created"] == 2
    assert [r["status"] for r in out["results"]] == ["created", "created", "duplicate"]
    assert out["results"][2]["id"] == out["results"][0]["id"]
    recalled = await call(client, "recall", key="user.language")
    assert recalled["value"] == "Dutch"
    found = await call(client, "search", query="billing", mode="keyword")
    assert [h["id"] for h in found["hits"]] == [out["results"][0]["id"]]


async def test_append_many_with_a_bad_item_stores_nothing(client: Client) -> None:
    message = await error(
        client,
        "append_many",
        items=[
            {"layer": "episodic", "content": "fine"},
            {"layer": "semantic", "content": "a fact without its key"},
        ],
    )
    assert "items[1].key" in message
    found = await call(client, "load_context", layer="episodic")
    assert "items" not in found  # none: the default, []
