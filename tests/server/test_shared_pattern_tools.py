"""Shared patterns through the MCP SDK client and the CLI (issue 33.6), on both backends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from memory_core.embeddings import LazyEmbedder
from server.cli.commands import main
from server.container import open_container
from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import FrozenClock, ready_fake
from tests.mcp_client import call, hosted

WANT = "Clients in healthcare typically want on-premise deployment."
PRIVATE = "Our mining clients want drone surveys of every quarry each quarter."


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


@pytest.fixture
def lazy() -> LazyEmbedder:
    return ready_fake()[0]


@pytest.fixture
async def client(
    settings: Settings, clock: FrozenClock, lazy: LazyEmbedder
) -> AsyncIterator[Client]:
    async with hosted(settings, clock=clock, embedder=lazy) as c:
        yield c


async def refresh(settings: Settings, clock: FrozenClock, lazy: LazyEmbedder) -> int:
    """The pattern job, as the daily maintenance or `documents refresh-patterns` runs it."""
    async with open_container(settings, clock, embedder=lazy) as c:
        return (await c.knowledge.business.shared.refresh()).published


async def test_a_pattern_k_opted_in_tenants_hold_reaches_others_labelled_and_anonymous(
    client: Client, settings: Settings, clock: FrozenClock, lazy: LazyEmbedder
) -> None:
    for tenant in ("north", "south", "east"):
        await call(client, "ingest_document", tenant=tenant, source="n.md", text=WANT)
        done = await call(client, "share_business_patterns", tenant=tenant, share=True)
        assert done["sharing"] is True and done["changed"] is True and done["min_tenants"] == 3
    # A tenant that did not opt in holds the pattern and a text of its own.
    await call(client, "ingest_document", tenant="mine", source="m.md", text=f"{WANT} {PRIVATE}")
    assert await refresh(settings, clock, lazy) == 1
    found = await call(
        client, "search_business_context", tenant="west", query=WANT, include_shared=True
    )
    assert found["shared"] == [
        {"shared": True, "text": WANT, "score": pytest.approx(1.0), "match": "strong"}
    ]
    said = json.dumps(found)
    for tenant in ("north", "south", "east", "mine"):
        assert tenant not in said  # no contributor is named, nor how many there are
    # The text answer labels it on its own line, apart from the tenant's (no) hits.
    answer = await client.call_tool(
        "search_business_context", {"tenant": "west", "query": WANT, "include_shared": True}
    )
    assert answer.content[0].text.splitlines() == [  # type: ignore[union-attr]
        "0 chunks of west (hybrid): no document of its own matched:",
        f"shared pattern strong: {WANT}",
    ]
    for tenant in ("north", "west"):
        for query in (PRIVATE, "drone surveys of every quarry"):
            other = await call(
                client,
                "search_business_context",
                tenant=tenant,
                query=query,
                include_shared=True,
            )
            assert "quarry" not in json.dumps(other)
    plain = await call(client, "search_business_context", tenant="west", query=WANT)
    assert plain["shared"] == []


async def test_opting_out_through_the_tool_removes_the_pattern_at_once(
    client: Client, settings: Settings, clock: FrozenClock, lazy: LazyEmbedder
) -> None:
    for tenant in ("north", "south", "east"):
        await call(client, "ingest_document", tenant=tenant, source="n.md", text=WANT)
        await call(client, "share_business_patterns", tenant=tenant, share=True)
    await refresh(settings, clock, lazy)
    out = await call(client, "share_business_patterns", tenant="south", share=False)
    assert (out["sharing"], out["changed"], out["passages_removed"]) == (False, True, 1)
    assert out["patterns_removed"] == 1 and out["since"] is None
    found = await call(
        client, "search_business_context", tenant="west", query=WANT, include_shared=True
    )
    assert found["shared"] == []
    # The tenant's own documents stay its own.
    mine = await call(client, "search_business_context", tenant="south", query=WANT)
    assert mine["hits"][0]["text"] == WANT


def test_the_cli_opts_a_tenant_in_and_out_and_runs_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "cli.db"))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    monkeypatch.setenv("MEMSTRATA_LOG_LEVEL", "WARNING")

    def run(*argv: str) -> tuple[int, dict[str, object], str]:
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        out, err = capsys.readouterr()
        return int(info.value.code or 0), json.loads(out) if out.strip() else {}, err

    code, out, _ = run("documents", "share", "--tenant", "acme", "--json")
    assert code == 0 and out["sharing"] is True and out["changed"] is True
    code, out, _ = run("documents", "sharing", "--tenant", "acme", "--json")
    assert code == 0 and out["sharing"] is True
    code, out, _ = run("documents", "refresh-patterns", "--json")
    assert code == 0 and out["published"] == 0
    assert "no pattern was computed" in str(out["notes"])  # no model: nothing by words alone
    code, out, _ = run("documents", "unshare", "--tenant", "acme", "--json")
    assert code == 0 and out["sharing"] is False and out["changed"] is True
    code, _, err = run("documents", "share", "--json")
    assert code == 2 and "--tenant" in err
