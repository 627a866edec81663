"""Contract tests of SharedPatternStore on both backends: opt-in, the pool, withdrawal at once."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memory_core.domain.knowledge import ChunkDraft, DocumentDraft, DocumentOrigin
from memory_core.domain.pattern_pool import PooledPattern
from memory_core.ports.knowledge import DocumentStore, PendingDocument
from tests.backends import StorageUnderTest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MODEL = "test-model"
TEXT = "Clients in healthcare typically want on-premise deployment."


async def put(store: DocumentStore, tenant: str, text: str = TEXT, source: str = "a.md") -> int:
    chunk = ChunkDraft(position=0, start=0, end=len(text), text=text)
    draft = DocumentDraft(
        tenant=tenant, source=source, origin=DocumentOrigin.INGEST, text=text, chunks=(chunk,)
    )
    return (await store.put_document(draft, None, None, T0)).document.id


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


async def fill(store: DocumentStore, tenants: list[str]) -> dict[str, int]:
    """Each tenant opted in, with one document read into the pool; tenant -> passage id."""
    for t in tenants:
        await put(store, t)
        assert await store.shared.opt_in(t, T0)
    pending = await store.shared.pending_documents(MODEL, limit=100)
    assert sorted(p.tenant for p in pending) == sorted(tenants)
    for p in pending:
        assert await store.shared.add_passages(p, [TEXT], np.stack([unit(1)]), MODEL, T0)
    return {p.tenant: p.id for p, _ in await store.shared.passages(MODEL)}


def pattern(ids: dict[str, int]) -> PooledPattern:
    first = sorted(ids)[0]
    holders = ((first, ids[first]), *((t, ids[t]) for t in sorted(ids) if t != first))
    return PooledPattern(passage_id=ids[first], text=TEXT, holders=holders, similarity=1.0)


async def test_opting_in_and_out_is_recorded_and_idempotent(storage: StorageUnderTest) -> None:
    shared = storage.documents().shared
    assert (await shared.status("acme")).opted_in_at is None
    assert await shared.opt_in("acme", T0) is True
    assert await shared.opt_in("acme", T0) is False
    assert (await shared.status("acme")).opted_in_at == T0
    assert await shared.opt_out("acme") == (0, 0)
    assert (await shared.status("acme")).opted_in_at is None


async def test_the_pool_never_reads_a_tenant_that_did_not_opt_in(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    doc = await put(store, "private")
    await fill(store, ["a", "b"])
    assert all(p.tenant != "private" for p in await store.shared.pending_documents(MODEL, limit=9))
    # Even asked directly, the store refuses a document of a tenant that is not opted in.
    stray = PendingDocument(id=doc, tenant="private", body=TEXT)
    assert not await store.shared.add_passages(stray, [TEXT], np.stack([unit(1)]), MODEL, T0)
    assert {p.tenant for p, _ in await store.shared.passages(MODEL)} == {"a", "b"}
    assert (await store.shared.status("private")).passages == 0


async def test_a_pattern_is_returned_only_while_k_opted_in_tenants_hold_it(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    ids = await fill(store, ["a", "b", "c"])
    assert await store.shared.replace_patterns([pattern(ids)], T0) == 1
    assert [p.text for p in await store.shared.patterns(3, MODEL)] == [TEXT]
    assert await store.shared.patterns(4, MODEL) == []  # k raised: hidden at once
    found = (await store.shared.patterns(3, MODEL))[0]
    assert found.vector is not None and np.allclose(found.vector, unit(1))
    assert (await store.shared.patterns(3, "other-model"))[0].vector is None


async def test_deleting_a_holders_document_withdraws_the_pattern_at_once(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    ids = await fill(store, ["a", "b", "c", "d"])
    await store.shared.replace_patterns([pattern(ids)], T0)
    assert await store.documents("d", None)
    await store.delete_documents("d", None)
    # Three holders are left (>= k), but the pattern lost one it was published with.
    assert await store.shared.patterns(3, MODEL) == []
    assert {p.tenant for p, _ in await store.shared.passages(MODEL)} == {"a", "b", "c"}


async def test_replacing_a_document_takes_its_passages_and_rereads_it(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    await fill(store, ["a"])
    await put(store, "a", TEXT + " Retail clients expect delivery within two weeks.")
    assert await store.shared.passages(MODEL) == []
    assert [p.tenant for p in await store.shared.pending_documents(MODEL, limit=9)] == ["a"]
    # A new model reads every document again.
    pending = await store.shared.pending_documents(MODEL, limit=9)
    await store.shared.add_passages(pending[0], [], None, MODEL, T0)
    assert await store.shared.pending_documents(MODEL, limit=9) == []
    assert len(await store.shared.pending_documents("new-model", limit=9)) == 1


async def test_opting_out_removes_the_tenants_passages_and_patterns_at_once(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    ids = await fill(store, ["a", "b", "c"])
    await store.shared.replace_patterns([pattern(ids)], T0)
    assert await store.shared.opt_out("b") == (1, 1)
    assert await store.shared.patterns(2, MODEL) == []
    assert {p.tenant for p, _ in await store.shared.passages(MODEL)} == {"a", "c"}
    status = await store.shared.status("b")
    assert (status.opted_in_at, status.passages, status.documents) == (None, 0, 0)
    assert await storage.fetchval("SELECT count(*) FROM shared_pattern_holders") == 0


async def test_a_publish_skips_passages_that_left_the_pool_meanwhile(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    ids = await fill(store, ["a", "b", "c"])
    await store.shared.opt_out("a")  # between the job's read and its publish
    assert await store.shared.replace_patterns([pattern(ids)], T0) == 0
    assert await store.shared.patterns(2, MODEL) == []
