"""Semantic search through MCP: lazy loading, backfill, model mismatch, reindex, real model."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.domain.models import Layer
from memory_core.embeddings import LazyEmbedder
from memory_core.errors import SchemaMismatchError
from server.cli.commands import main
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.catalog import TOOL_NAMES
from tests.fakes import FakeEmbedder, FrozenClock, blocked_fake
from tests.mcp_client import hosted


async def test_tools_answer_while_the_model_loads_and_backfill_follows(
    settings: Settings, clock: FrozenClock
) -> None:
    lazy, fake, release = blocked_fake()
    brief = settings.model_copy(update={"embedding_wait": 0.05})
    async with hosted(brief, clock=clock, embedder=lazy) as client:
        assert len((await client.list_tools()).tools) == len(TOOL_NAMES)
        await client.call_tool("append", {"layer": "episodic", "content": "before the model"})
        early = (await client.call_tool("search", {"query": "model"})).structured_content
        assert early is not None
        assert early["mode"] == "keyword"
        assert early["notes"] == [
            "The embedding model was still loading after 0.05 s; used keyword search for this "
            "query."
        ]
        release.set()
        for _ in range(100):  # the lifespan's backfill task embeds the early row
            if fake.calls:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)
        late = (
            await client.call_tool("search", {"query": "model", "mode": "semantic"})
        ).structured_content
        assert late is not None and late["mode"] == "semantic" and len(late["hits"]) == 1


async def test_a_store_indexed_by_another_model_is_refused(settings: Settings) -> None:
    fake = FakeEmbedder()
    lazy = LazyEmbedder(lambda: fake, model_id=fake.model_id, dims=fake.dims)
    async with open_container(settings, embedder=lazy):
        pass
    other = LazyEmbedder(lambda: fake, model_id="another-model", dims=fake.dims)
    with pytest.raises(SchemaMismatchError, match="memstrata reindex"):
        async with open_container(settings, embedder=other):
            pass


@pytest.fixture
def real_settings(tmp_path: Path) -> Settings:
    return Settings(db=tmp_path / "real.db", project="t", schedule=ScheduleSettings(enabled=False))


async def test_real_model_finds_a_paraphrase_with_no_shared_words(
    real_settings: Settings,
) -> None:
    async with hosted(real_settings) as client:
        for text in [
            "Book a flight to Tokyo next week.",
            "The release is blocked by a database bug.",
            "Bob enjoys drinking coffee.",
            "Quarterly budget review meeting on Monday.",
        ]:
            await client.call_tool("append", {"layer": "episodic", "content": text})
        result: dict[str, Any] = {}
        for _ in range(100):  # until the model (loaded in the background) is used
            result = (
                await client.call_tool(
                    "search", {"query": "reserve plane tickets for Japan", "explain": True}
                )
            ).structured_content or {}
            if result.get("mode") == "hybrid" and result["hits"]:
                break
            await asyncio.sleep(0.1)
        assert result["mode"] == "hybrid"
        top = result["hits"][0]
        assert top["content"] == "Book a flight to Tokyo next week."
        assert top["signals"].get("bm25_rank") is None and top["signals"]["vector_rank"] == 1


def test_cli_reindex_re_embeds_everything(
    real_settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", str(real_settings.db))

    async def seed() -> None:
        fake = FakeEmbedder()
        lazy = LazyEmbedder(lambda: fake, model_id=fake.model_id, dims=fake.dims)
        lazy.start()
        await lazy.wait(5)
        async with open_container(real_settings, embedder=lazy) as c:
            for i in range(3):
                await c.memories.append("t", Layer.EPISODIC, f"note {i}")

    asyncio.run(seed())
    with pytest.raises(SystemExit) as refused:
        main(["stats"])
    assert refused.value.code == 1
    assert "memstrata reindex" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["reindex", "--json"])
    assert done.value.code == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"model": "all-MiniLM-L6-v2-int8", "embedded": 3}
    assert "reindex: 3/3 (100%)" in err
    with pytest.raises(SystemExit) as ok:
        main(["stats"])
    assert ok.value.code == 0


def test_cli_reindex_needs_a_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_DB", str(tmp_path / "n.db"))
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "none")
    with pytest.raises(SystemExit) as info:
        main(["reindex"])
    assert info.value.code == 2 and "no model" in capsys.readouterr().err


def test_unknown_embedding_model_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSTRATA_EMBEDDING_MODEL", "gpt-embed-9000")
    with pytest.raises(SystemExit) as info:
        main(["stats"])
    assert info.value.code == 2 and "'none' or 'st:<model>'" in capsys.readouterr().err


async def test_without_preload_the_model_loads_at_first_use_then_backfills(
    settings: Settings, clock: FrozenClock
) -> None:
    fake = FakeEmbedder()
    lazy = LazyEmbedder(lambda: fake, model_id=fake.model_id, dims=fake.dims)
    lazy_settings = settings.model_copy(update={"embedding_preload": False})
    async with hosted(lazy_settings, clock=clock, embedder=lazy) as client:
        await client.call_tool("append", {"layer": "episodic", "content": "first note"})
        assert fake.calls == [] or lazy.ready  # nothing loaded the model eagerly
        first = (await client.call_tool("search", {"query": "note"})).structured_content
        assert first is not None
        for _ in range(100):  # the first search started the load; the backfill follows
            if any("first note" in c for c in fake.calls):
                break
            await asyncio.sleep(0.02)
        later = (
            await client.call_tool("search", {"query": "note", "mode": "semantic"})
        ).structured_content
        assert later is not None and later["mode"] == "semantic" and len(later["hits"]) == 1


async def test_shutdown_does_not_wait_for_a_model_nobody_asked_for(
    settings: Settings, clock: FrozenClock
) -> None:
    lazy = LazyEmbedder(FakeEmbedder, model_id="fake-bow-32", dims=32)
    lazy_settings = settings.model_copy(update={"embedding_preload": False})
    async with asyncio.timeout(5), hosted(lazy_settings, clock=clock, embedder=lazy) as c:
        await c.list_tools()
    assert not lazy.ready
