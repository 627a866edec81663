"""Contract tests of the knowledge ports (scratchpad, preferences, playbooks, documents).

Parametrized over both backends by the `storage` fixture, so a difference between the SQLite
and PostgreSQL stores fails one of the two runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memory_core.domain.knowledge import ChunkDraft, DocumentOrigin, PlaybookDraft, SnippetDraft
from memory_core.domain.similarity import normalised_hash
from tests.backends import StorageUnderTest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MODEL = "test-model"


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def snippet(session: str, text: str, user: str | None = None) -> SnippetDraft:
    return SnippetDraft(
        session_id=session,
        text=text,
        norm_hash=normalised_hash(text),
        user=user,
        tenant=None,
        salient=False,
        promote_to=None,
    )


def playbook(user: str, flow: str, query: str) -> PlaybookDraft:
    return PlaybookDraft(
        user=user,
        flow=flow,
        user_query=query,
        slots={"n": 1},
        tool_calls=[{"tool": "t"}],
        outcome="done",
        record_hash=f"{user}/{flow}/{query}",
    )


async def test_preferences_upsert_list_and_delete_by_key_or_all(storage: StorageUnderTest) -> None:
    store = storage.preferences()
    for key in ("units", "tone", "lang"):
        await store.upsert("ann", key, f"{key} rule", None, "client", unit(1, 0), MODEL, T0)
    await store.upsert("bob", "units", "imperial", None, "client", None, None, T0)
    stored, previous = await store.upsert(
        "ann", "units", "metric", "f1", "client", None, None, T0 + timedelta(hours=1)
    )
    assert previous == "units rule" and stored.value == "metric" and stored.flow_id == "f1"
    listed = await store.list_user("ann", MODEL)
    assert [p.key for p, _ in listed] == ["lang", "tone", "units"]
    assert [v is not None for _, v in listed] == [True, True, False]  # replaced without one
    assert await store.delete("ann", ["units", "missing"]) == ["units"]
    assert await store.get("ann", "units") is None
    assert await store.delete("ann", None) == ["lang", "tone"]
    assert await store.list_user("ann", None) == []
    bob = await store.get("bob", "units")
    assert bob is not None and bob.value == "imperial"


async def test_playbooks_dedupe_filter_by_flow_and_delete(storage: StorageUnderTest) -> None:
    store = storage.playbooks()
    a, created = await store.add(playbook("ann", "booking", "book a table"), None, None, T0)
    again, second = await store.add(playbook("ann", "booking", "book a table"), None, None, T0)
    b, _ = await store.add(playbook("ann", "weather", "rain tomorrow?"), unit(0, 1), MODEL, T0)
    c, _ = await store.add(playbook("bob", "booking", "book a table"), None, None, T0)
    assert created and not second and again.id == a.id
    assert [p.id for p, _ in await store.list_user("ann", "booking", None)] == [a.id]
    assert [p.id for p, _ in await store.list_user("ann", None, MODEL)] == [a.id, b.id]
    assert await store.delete("ann", [b.id, c.id]) == [b.id]  # bob's id is not ann's
    assert await store.delete("ann", None) == [a.id]
    assert [p.id for p, _ in await store.list_user("bob", None, None)] == [c.id]


async def test_scratchpad_delete_by_ids_session_or_user(storage: StorageUnderTest) -> None:
    store = storage.scratchpad()
    s1a = (await store.write(snippet("s1", "one", "ann"), None, None, T0, cap=10)).snippet
    s1b = (await store.write(snippet("s1", "two", "ann"), None, None, T0, cap=10)).snippet
    s2a = (await store.write(snippet("s2", "three", "ann"), None, None, T0, cap=10)).snippet
    s2b = (await store.write(snippet("s2", "four", "bob"), None, None, T0, cap=10)).snippet
    s3 = (await store.write(snippet("s3", "five"), None, None, T0, cap=10)).snippet
    assert await store.delete(session_id="s1", user=None, ids=[s1a.id, s2a.id]) == [s1a.id]
    assert [s.id for s in await store.read("s1", None, T0)] == [s1b.id]
    assert await store.delete(session_id=None, user="ann", ids=None) == [s1b.id, s2a.id]
    assert [s.id for s in await store.read("s2", None, T0)] == [s2b.id]
    assert await store.delete(session_id="s3", user=None, ids=None) == [s3.id]
    assert await store.read("s3", None, T0) == []


async def test_documents_delete_by_source_or_all_and_forget_their_vectors(
    storage: StorageUnderTest,
) -> None:
    store = storage.documents()
    chunk = [ChunkDraft(position=0, start=0, end=4, text="text")]
    for source, vector in (("a.md", unit(1, 0)), ("b.md", unit(0, 1))):
        await store.put_document(
            "acme",
            source,
            DocumentOrigin.INGEST,
            "text",
            source,
            chunk,
            vector.reshape(1, -1),
            MODEL,
            T0,
        )
    await store.put_document(
        "other", "a.md", DocumentOrigin.INGEST, "text", "x", chunk, None, None, T0
    )
    listed = await store.documents("acme", None)
    assert [d.source for d, _ in listed] == ["a.md", "b.md"]
    near = await store.vector_candidates("acme", unit(1, 0), MODEL, limit=5)  # caches vectors
    assert len(near) == 2
    assert await store.delete_documents("acme", ["a.md", "zzz"]) == ["a.md"]
    assert await store.get_document("acme", "a.md") is None
    near = await store.vector_candidates("acme", unit(1, 0), MODEL, limit=5)
    assert len(near) == 1  # the cached matrix was reloaded: a.md's chunk is gone
    assert await store.keyword_candidates("acme", '"text"', limit=5) == [near[0][0]]
    assert await store.delete_documents("acme", None) == ["b.md"]
    assert await store.documents("acme", None) == []
    assert [d.source for d, _ in await store.documents("other", None)] == ["a.md"]
