"""append_many of a large batch: one pass rules out look-alikes, the rest are judged as before."""

from __future__ import annotations

import dataclasses

import pytest

from memory_core.domain.duplicates import DuplicateThresholds
from memory_core.domain.models import Layer
from memory_core.services import memories as memories_module
from memory_core.services import resemblance as resemblance_module
from memory_core.services.memories import AppendItem, MemoryService
from tests.backends import StorageUnderTest
from tests.services.test_duplicates_at_write import service  # noqa: F401  # the fixture

TOPICS = ["deploy", "garden", "piano", "kitchen", "travel", "budget", "server", "holiday"]


async def test_a_large_batch_finds_stored_look_alikes_and_candidates(
    service: MemoryService,  # noqa: F811
    storage: StorageUnderTest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judged: list[str] = []
    real = resemblance_module.resemblances

    async def counting(*args: object, **kwargs: object) -> object:
        judged.append(args[2].content)  # type: ignore[attr-defined]
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memories_module, "resemblances", counting)
    stored = await service.append("p", Layer.EPISODIC, "Alice likes green tea in the morning")
    fresh = [f"{t} notes {i}: {t} {t} plans for the {t} week" for i, t in enumerate(TOPICS)]
    batch = [
        *(AppendItem(layer=Layer.EPISODIC, content=text) for text in fresh),
        AppendItem(layer=Layer.EPISODIC, content="Alice likes the green tea in the morning"),
    ]
    judged.clear()
    results = await service.append_many("p", batch)
    assert [r.status for r in results] == ["created"] * len(fresh) + ["duplicate"]
    assert results[-1].memory.id == stored.memory.id
    assert "Alice likes the green tea in the morning" in judged
    if storage.name == "sqlite":
        # Texts resembling nothing stored were ruled out in one pass, not searched one by one
        # (a vector index without that pass, PostgreSQL's, searches each one).
        assert not set(fresh) & set(judged)
    # The same batch again: each of its texts is now stored, so each is judged a duplicate.
    again = await service.append_many("p", batch)
    assert {r.status for r in again} == {"duplicate"}
    assert [r.memory.id for r in again] == [r.memory.id for r in results]


async def test_with_merging_off_a_batch_is_neither_probed_nor_searched(
    service: MemoryService,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A duplicate band no cosine reaches (bench/scale.py builds so) writes every text as is."""
    assert service.indexer is not None
    probed: list[int] = []
    real_probe = service.indexer.maybe_close

    async def probing(*args: object, **kwargs: object) -> object:
        probed.append(len(args[2]))  # type: ignore[arg-type]
        return await real_probe(*args, **kwargs)  # type: ignore[arg-type]

    judged: list[str] = []

    async def judging(*args: object, **kwargs: object) -> object:
        judged.append(args[2].content)  # type: ignore[attr-defined]
        raise AssertionError("searched one by one")

    monkeypatch.setattr(service.indexer, "maybe_close", probing)
    monkeypatch.setattr(memories_module, "resemblances", judging)
    off = dataclasses.replace(
        service, duplicates=DuplicateThresholds(duplicate_similarity=2.0, candidate_similarity=2.0)
    )
    text = "Alice likes green tea in the morning"
    await off.append_many("p", [AppendItem(layer=Layer.EPISODIC, content=text)])
    batch = [AppendItem(layer=Layer.EPISODIC, content=f"{text}, day {i}") for i in range(10)]
    results = await off.append_many("p", batch)
    assert [r.status for r in results] == ["created"] * 10
    assert probed == [] and judged == []
    # With merging on, a batch is probed in one pass.
    await service.append_many(
        "p", [AppendItem(layer=Layer.EPISODIC, content=f"{t} plans") for t in TOPICS]
    )
    assert probed == [len(TOPICS)]
