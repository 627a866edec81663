"""Shared anonymised patterns through BusinessService, on both backends (issue 33.6).

The deterministic FakeEmbedder gives identical texts cosine 1 and texts of other words low
cosine, so these tests are about the rules (who counts, what leaves, when it goes); the
calibration with the real model is tests/unit/test_shared_pattern_calibration.py.
"""

from __future__ import annotations

import pytest

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.redaction import RedactionPolicy
from memory_core.errors import InvalidInputError
from memory_core.services.business import BusinessService
from memory_core.services.embedding_access import EmbeddingAccess
from tests.backends import StorageUnderTest
from tests.fakes import FrozenClock, ready_fake

WANT = "Clients in healthcare typically want on-premise deployment."
# Only the tenant that did not opt in writes this: it must never reach anyone else.
PRIVATE = "Our mining clients want drone surveys of every quarry each quarter."


def service(
    storage: StorageUnderTest, clock: FrozenClock, *, model: bool = True, **policy: object
) -> BusinessService:
    lazy = ready_fake()[0] if model else None
    return BusinessService(
        store=storage.documents(),
        embedding=EmbeddingAccess(source=lazy, write_wait=5.0, read_wait=5.0),
        clock=clock,
        policy=KnowledgePolicy.model_validate(policy),
        redaction=RedactionPolicy(),
    )


async def seed(b: BusinessService, tenant: str, *texts: str, share: bool = True) -> None:
    await b.ingest(tenant, "notes.md", " ".join(texts))
    if share:
        await b.shared.opt_in(tenant)


async def shared_by_three(b: BusinessService) -> None:
    """Tenants a, b and c opted in, each holding WANT, and the pattern job run once."""
    for t in "abc":
        await seed(b, t, WANT)
    await b.shared.refresh()


def texts_of(found: object) -> str:
    """Everything a search answer says, as one string."""
    return repr(found)


async def test_only_opted_in_tenants_count_and_a_non_opted_tenant_never_leaks(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock)
    await seed(b, "a", WANT)
    await seed(b, "b", WANT)
    # c holds the pattern too, and a text of its own, but did not opt in: 2 opted-in < k.
    await seed(b, "c", WANT, PRIVATE, share=False)
    report = await b.shared.refresh()
    assert (report.published, report.pool) == (0, 2)
    for asker in ("a", "b", "d"):
        found = await b.search(asker, "what do healthcare clients want", include_shared=True)
        assert found.shared == []
    # A third opted-in tenant makes k: the pattern is shared, c's own text still never is.
    await seed(b, "d", WANT)
    assert (await b.shared.refresh()).published == 1
    for asker in ("a", "b", "d", "e"):
        for query in ("what do healthcare clients want", PRIVATE, "mining drone quarry"):
            said = texts_of(await b.search(asker, query, include_shared=True))
            assert "drone" not in said and "quarry" not in said
    shared = (await b.search("e", WANT, include_shared=True)).shared
    assert [h.text for h in shared] == [WANT]
    assert await storage.fetchval("SELECT count(*) FROM shared_passages WHERE tenant = ?", "c") == 0
    assert (await b.shared.status("c")).opted_in_at is None


async def test_a_search_without_include_shared_returns_no_shared_pattern(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock)
    await shared_by_three(b)
    assert (await b.search("a", WANT)).shared == []
    assert [h.text for h in (await b.search("a", WANT, include_shared=True)).shared] == [WANT]


async def test_opting_out_removes_the_tenants_contributions_at_once(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock)
    await shared_by_three(b)
    change = await b.shared.opt_out("b")
    assert (change.sharing, change.changed, change.passages_removed) == (False, True, 1)
    # No refresh: the pattern (held by a, b, c at publication) is gone from every search.
    assert (await b.search("a", WANT, include_shared=True)).shared == []
    assert (await b.shared.refresh()).published == 0  # and stays gone: 2 < k
    again = await b.shared.opt_out("b")
    assert again.changed is False


async def test_deleting_a_document_withdraws_what_it_held_at_once(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock)
    for t in "abcd":
        await seed(b, t, WANT)
    await b.shared.refresh()
    await b.delete_documents("d", ["notes.md"])
    assert (await b.search("a", WANT, include_shared=True)).shared == []
    assert (await b.shared.refresh()).published == 1  # a, b, c still hold it


async def test_names_and_identifiers_differ_per_tenant_and_none_of_them_leaves(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock)
    names = {
        "north": ("Northwind", "ops@northwind.example", "INV-2023-0042"),
        "cont": ("Contoso", "buyers@contoso.example", "PO-77812-X"),
        "fab": ("Fabrikam", "team@fabrikam.example", "REF-99A1"),
    }
    for tenant, (client, mail, ref) in names.items():
        await seed(
            b,
            tenant,
            f"Enterprise clients like {client} ask for quarterly business reviews.",
            f"Send the review pack for {ref} to {mail} before the meeting.",
        )
    assert (await b.shared.refresh()).published == 2
    shared = (await b.search("x", "quarterly business reviews", include_shared=True)).shared
    assert shared[0].text == "Enterprise clients like [name] ask for quarterly business reviews."
    pack = (await b.search("x", "send the review pack", include_shared=True)).shared
    assert pack[0].text == "Send the review pack for [id] to [email] before the meeting."
    everything = texts_of(shared + pack)
    for client, mail, ref in names.values():
        assert client not in everything and mail not in everything and ref not in everything


async def test_k_is_configurable(storage: StorageUnderTest, clock: FrozenClock) -> None:
    b = service(storage, clock, shared_min_tenants=2)
    for t in "ab":
        await seed(b, t, WANT)
    assert (await b.shared.refresh()).published == 1
    # Raising k hides the pattern at once, without a refresh.
    strict = service(storage, clock, shared_min_tenants=3)
    assert (await strict.search("a", WANT, include_shared=True)).shared == []


async def test_a_refresh_embeds_a_bounded_number_of_sentences_and_the_next_goes_on(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock, shared_embed_per_run=1)
    for t in "abc":
        await seed(b, t, WANT)
    first = await b.shared.refresh()
    assert (first.documents_read, first.sentences_embedded, first.documents_left) == (1, 1, True)
    assert first.published == 0
    await b.shared.refresh()
    last = await b.shared.refresh()
    assert (last.documents_left, last.pool, last.published) == (False, 3, 1)
    assert (await b.shared.refresh()).documents_read == 0  # nothing is read twice


async def test_a_tenant_contributes_at_most_max_passages(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    b = service(storage, clock, shared_max_passages=2)
    await seed(
        b,
        "a",
        WANT,
        "Retail clients expect delivery within two weeks.",
        "Banks require data to stay in the country.",
    )
    await b.shared.refresh()
    assert (await b.shared.status("a")).passages == 2


async def test_without_a_model_nothing_is_computed_and_search_matches_by_words(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    with_model = service(storage, clock)
    await shared_by_three(with_model)
    words = service(storage, clock, model=False)
    report = await words.shared.refresh()
    assert report.published == 0 and "no pattern was computed" in report.notes[0]
    # The published pattern stays, and a search without a model finds it by its words.
    found = await words.search("z", "healthcare clients on-premise deployment", include_shared=True)
    assert [h.text for h in found.shared] == [WANT]


async def test_sharing_turned_off_refuses_opt_in_and_returns_nothing(
    storage: StorageUnderTest, clock: FrozenClock
) -> None:
    on = service(storage, clock)
    await shared_by_three(on)
    off = service(storage, clock, shared_patterns=False)
    with pytest.raises(InvalidInputError, match="turned off"):
        await off.shared.opt_in("d")
    assert (await off.search("a", WANT, include_shared=True)).shared == []
    assert (await off.shared.refresh()).published == 0
    assert (await off.shared.opt_out("a")).changed is True  # withdrawing is always allowed
