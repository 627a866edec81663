"""Who wrote a memory: stored, filterable, and lifted when the query names them (both backends)."""

from __future__ import annotations

import dataclasses

import pytest

from memory_core.config.policies import RankingPolicy
from memory_core.domain.models import Layer
from memory_core.errors import InvalidInputError
from memory_core.services.memories import AppendItem, MemoryService, SearchRequest


async def test_author_is_stored_read_back_and_normalised(service: MemoryService) -> None:
    stored = await service.append("p", Layer.EPISODIC, "Shipped v2", author="  Ada   Lovelace ")
    assert stored.memory.author == "Ada Lovelace"
    again = await service.repo.get("p", stored.memory.id)
    assert again is not None and again.author == "Ada Lovelace"
    plain = await service.append("p", Layer.EPISODIC, "No author here")
    assert plain.memory.author is None


async def test_append_many_stores_each_items_author(service: MemoryService) -> None:
    results = await service.append_many(
        "p",
        [
            AppendItem(layer=Layer.EPISODIC, content="one", author="assistant"),
            AppendItem(layer=Layer.EPISODIC, content="two"),
        ],
    )
    assert [r.memory.author for r in results] == ["assistant", None]


async def test_an_upsert_keeps_the_author_unless_a_new_one_is_given(
    service: MemoryService,
) -> None:
    await service.append("p", Layer.SEMANTIC, "Helix", key="user.editor", author="Ada")
    kept = await service.append("p", Layer.SEMANTIC, "Zed", key="user.editor")
    assert kept.status == "updated" and kept.memory.author == "Ada"
    changed = await service.append("p", Layer.SEMANTIC, "Vim", key="user.editor", author="Bob")
    assert changed.memory.author == "Bob"


@pytest.mark.parametrize(
    ("author", "reason"),
    [("", "must not be empty"), ("Ada\nLovelace", "one line"), ("x" * 101, "at most 100")],
)
async def test_a_bad_author_is_refused_by_name_and_nothing_is_written(
    service: MemoryService, author: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason) as info:
        await service.append("p", Layer.EPISODIC, "text", author=author)
    assert info.value.field == "author"
    with pytest.raises(InvalidInputError) as batch:
        await service.append_many(
            "p",
            [
                AppendItem(layer=Layer.EPISODIC, content="ok"),
                AppendItem(layer=Layer.EPISODIC, content="bad", author=author),
            ],
        )
    assert batch.value.field == "items[1].author"
    with pytest.raises(InvalidInputError) as search:
        await service.search(SearchRequest(project="p", query="text", author=author))
    assert search.value.field == "author"
    assert await service.repo.projects() == []


async def test_a_credential_in_the_author_is_redacted(service: MemoryService) -> None:
    out = await service.append(
        "p", Layer.EPISODIC, "deployed", author="ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
    )
    assert out.memory.author is not None and "REDACTED" in out.memory.author
    assert out.redacted


async def test_search_filters_by_author(service: MemoryService) -> None:
    ada = await service.append("p", Layer.EPISODIC, "tea in the morning", author="Ada")
    await service.append("p", Layer.EPISODIC, "tea at night", author="Bob")
    await service.append("p", Layer.EPISODIC, "tea with nobody")
    found = await service.search(SearchRequest(project="p", query="tea", author="Ada"))
    assert [h.memory.id for h in found.hits] == [ada.memory.id]
    assert (await service.search(SearchRequest(project="p", query="tea", author="ada"))).hits == []


async def test_memories_by_the_author_the_query_names_are_lifted(service: MemoryService) -> None:
    # Without the lift the shorter text wins on BM25; the question names Caroline.
    await service.append("p", Layer.EPISODIC, "went hiking on Sunday", author="Melanie")
    caroline = await service.append(
        "p", Layer.EPISODIC, "went hiking on Sunday morning", author="Caroline"
    )
    request = SearchRequest(project="p", query="When did Caroline go hiking?")
    off = dataclasses.replace(service, ranking=RankingPolicy(author_weight=0))
    assert (await off.search(request)).hits[0].memory.id != caroline.memory.id
    found = await service.search(request)
    assert found.hits[0].memory.id == caroline.memory.id
    assert found.hits[0].signals.author_lift > 0
    assert found.hits[1].signals.author_lift == 0
