"""bench.search_phases times the steps of a real search, and leaves the service as it was.

The benchmark wraps the service's own methods by name: a renamed step must fail here, not
leave a phase silently missing from docs/benchmarks.md.
"""

from __future__ import annotations

from pathlib import Path

from bench.search_phases import Timings, _embed_after_search, _instrument
from memory_core.domain.models import Layer, SearchMode
from memory_core.services import memories as memories_module
from memory_core.services.memories import SearchRequest
from server.container import open_container
from server.settings import Settings
from tests.fakes import FrozenClock, ready_fake


async def test_each_phase_of_a_hybrid_search_is_timed_then_unwrapped(
    settings: Settings, tmp_path: Path, clock: FrozenClock
) -> None:
    lazy, _ = ready_fake()
    local = settings.model_copy(update={"db": tmp_path / "m.db"})
    async with open_container(local, clock, embedder=lazy) as store:
        for text in ("the billing service moved to Frankfurt", "staging listens on 8080"):
            await store.memories.append("p", Layer.EPISODIC, text)
        clock.advance(seconds=60)  # versions are written at different times: the fold runs
        await store.memories.append("p", Layer.EPISODIC, "the billing service moved to Paris")
        assert store.indexer is not None
        await store.indexer.backfill(await lazy.wait(5))
        names = ("rank_candidates", "hand_out_read")  # the module's own imports, wrapped there
        originals = [getattr(memories_module, name) for name in names]

        timings = Timings()
        _instrument(timings, store, memories_module)
        request = SearchRequest(project="p", query="billing service", mode=SearchMode.HYBRID)
        assert (await store.memories.search(request)).hits
        timings.unwrap()

        assert {"embed", "keyword", "vector", "first", "fuse", "rank", "fold", "hand_out"} <= set(
            timings.samples
        )
        assert [getattr(memories_module, name) for name in names] == originals
        steps = {
            "embed_query",
            "search_vectors",
            "search_text",
            "_first_candidates",
            "_fold_versions",
        }
        for owner in (store.memories, store.indexer, store.indexer.vectors, store.repo):
            assert not steps & set(vars(owner)), owner  # the class's own methods again


async def test_the_embedding_after_a_search_is_timed_once_the_search_is_over() -> None:
    calls: list[str] = []

    async def search(q: str) -> None:
        calls.append(f"search {q}")

    summary = await _embed_after_search(
        search, lambda texts: calls.append(f"embed {texts[0]}"), ["a", "b"], runs=2
    )
    assert calls == ["search a", "embed a", "embed a", "search b", "embed b", "embed b"] * 2
    assert summary["after_search"]["n"] == summary["after_embedding"]["n"] == 4
