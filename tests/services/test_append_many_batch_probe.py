"""append_many of a large batch: one pass rules out look-alikes, the rest are judged as before."""

from __future__ import annotations

import pytest

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
