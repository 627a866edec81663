"""Embedding memories into the vector index: on write, in batches, and as a backfill."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio
import structlog

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer, Memory, VectorMatch
from memory_core.errors import EmbeddingUnavailableError
from memory_core.ports import Embedder, EmbedderSource, VectorIndex

__all__ = ["Indexer", "NearDuplicate", "embedding_text"]

if TYPE_CHECKING:
    # numpy loads with the embedder, where vectors exist; the hooks and keyword-only CLI
    # commands that import this module never pay for it (see tests/server/test_import_boundaries).
    import numpy as np
    import numpy.typing as npt

log = structlog.get_logger(__name__)

BATCH_SIZE = 64
# How long a batch of new texts waits for writes already on their way (Indexer._drain_texts).
_GATHER_S = 0.05


def embedding_text(memory: Memory) -> str:
    """The text a memory is embedded as: a keyed row's key gives its value meaning.

    What a said turn replies to (metadata `reply_to`, domain.turns) gives an answer its
    question: "Port 8443." alone is about nothing.
    """
    text = f"{memory.key}: {memory.content}" if memory.key else memory.content
    reply_to = memory.metadata.get("reply_to")
    return f"{text} (replying to: {reply_to})" if isinstance(reply_to, str) and reply_to else text


@dataclass(frozen=True)
class NearDuplicate:
    """An existing memory of the same project and layer that a new one closely resembles."""

    id: int
    similarity: float


def _shutting_down() -> EmbeddingUnavailableError:
    return EmbeddingUnavailableError("the server is shutting down")


_Pending = tuple[Memory, "asyncio.Future[npt.NDArray[np.float32]]"]
_PendingText = tuple[str, "asyncio.Future[npt.NDArray[np.float32]]"]
_Item = TypeVar("_Item")


async def _drain(
    queue: list[tuple[_Item, asyncio.Future[npt.NDArray[np.float32]]]],
    batch_size: int,
    embed: Callable[[list[_Item]], Awaitable[Sequence[npt.NDArray[np.float32]]]],
    gather: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Embed a queue's items in batches until it is empty, answering each item's future.

    Items that arrive while a batch is embedded join the next one; `gather`, awaited before
    each batch is taken, may wait for items about to arrive.
    """
    while queue:
        if gather is not None:
            await gather()
        batch = queue[:batch_size]
        del queue[:batch_size]
        try:
            vectors = await embed([item for item, _ in batch])
        except BaseException as exc:
            # Cancelled (shutdown) or failed: every waiter of this batch must hear of it.
            failure = exc if isinstance(exc, Exception) else _shutting_down()
            for _, future in batch:
                if not future.done():
                    future.set_exception(failure)
            if not isinstance(exc, Exception):
                raise
            continue
        for (_, future), vector in zip(batch, vectors, strict=True):
            if not future.done():
                future.set_result(vector)


@dataclass
class Indexer:
    """Keeps the vector index in step with the rows.

    Concurrent appends are embedded together: the first one starts a drain task, and every
    append that arrives while the model is busy joins the next batch. A lone append is embedded
    at once, so batching adds no latency; under load one model call serves many appends.

    `model_wait` bounds how long a query or a write waits for a model that is still loading
    (0: never wait, use the model only once it is ready).
    """

    vectors: VectorIndex
    source: EmbedderSource
    batch_size: int = BATCH_SIZE
    model_wait: float = 0.0
    _pending: list[_Pending] = field(default_factory=list, init=False, repr=False)
    _drainer: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    # Texts of writes not stored yet, embedded before their duplicate check (`embed_new`).
    _texts: list[_PendingText] = field(default_factory=list, init=False, repr=False)
    _text_drainer: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    # Writes between their start and their text's place in `_texts` (see `_drain_texts`).
    _arriving: int = field(default=0, init=False, repr=False)
    _moved: asyncio.Event | None = field(default=None, init=False, repr=False)
    _backfiller: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    # A backfill asked for while one runs: the running one looks for rows again before it ends.
    _again: bool = field(default=False, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)
    # A backfill one search has already waited for in vain: later searches do not wait again.
    _waited_out: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    async def embedder_within(self, max_wait: float) -> Embedder | None:
        """The embedder, waiting up to `max_wait` s for it to load (starting the load if needed).

        Trigger: a query or write in the first second of a process, while the model loads.
        Why: a client's first search comes right after start-up (the server's instructions ask
        for it), and without the model a paraphrase finds nothing. Outcome: the caller waits,
        bounded; None if the model is not ready by then or failed to load.
        """
        embedder = self.source.current()
        if embedder is not None or max_wait <= 0 or self._closed:
            return embedder
        try:
            return await self.source.wait(max_wait)
        except EmbeddingUnavailableError:
            return None

    async def embed_query(self, text: str) -> npt.NDArray[np.float32] | None:
        """The query's vector, waiting up to `model_wait` s for the model; None without it."""
        embedder = await self.embedder_within(self.model_wait)
        if embedder is None:
            return None
        import numpy as np  # already loaded by the embedder

        vectors = await anyio.to_thread.run_sync(embedder.embed, [text])
        return np.asarray(vectors[0], dtype=np.float32)

    async def backfill_settled(self, max_wait: float) -> bool:
        """Wait up to `max_wait` s for a running backfill; True when none is left running.

        Trigger: a search right after start-up while rows stored without vectors (imports,
        writes while no model was loaded) are being embedded. Why: by meaning, they would be
        missed. Outcome: the search waits within its budget; a backfill too long for that is
        waited for once only, so a long re-embedding does not slow every search.
        """
        task = self._backfiller
        if task is None or task.done():
            return True
        if task is self._waited_out or max_wait <= 0:
            return False
        done, _ = await asyncio.wait({task}, timeout=max_wait)
        if not done:
            self._waited_out = task
        return bool(done)

    async def index(
        self, memories: Sequence[Memory], embedder: Embedder
    ) -> list[npt.NDArray[np.float32]]:
        """Embed and store vectors for rows; identical texts are embedded once.

        Returns:
            The vectors, in the order of `memories`.
        """
        texts = [embedding_text(m) for m in memories]
        hashes = [content_hash(t) for t in texts]
        known = await self.vectors.vectors_by_hash(hashes)
        todo = list({h: t for h, t in zip(hashes, texts, strict=True) if h not in known}.items())
        if todo:
            fresh = await anyio.to_thread.run_sync(embedder.embed, [t for _, t in todo])
            known.update({h: fresh[i] for i, (h, _) in enumerate(todo)})
        vectors = [known[h] for h in hashes]
        await self.vectors.put_vectors(list(zip(memories, hashes, vectors, strict=True)))
        return vectors

    async def maybe_close(
        self,
        project: str,
        layer: Layer,
        vectors: Sequence[npt.NDArray[np.float32]],
        *,
        min_similarity: float,
        neighbours: int,
    ) -> list[bool] | None:
        """For each vector, whether a stored row of the project and layer may be that close.

        One pass for a batch (SqliteVectorIndex.any_close); False is certain, True means "look
        closer". None when the vector index has no such pass (each vector is then searched).
        """
        probe = getattr(self.vectors, "any_close", None)
        if probe is None:
            return None
        found: list[bool] = await probe(
            project, layer, vectors, min_similarity=min_similarity, neighbours=neighbours
        )
        return found

    async def store(self, items: Sequence[tuple[Memory, npt.NDArray[np.float32]]]) -> None:
        """Store vectors already computed for rows (the embedding of their `embedding_text`)."""
        await self.vectors.put_vectors([(m, content_hash(embedding_text(m)), v) for m, v in items])

    async def embed_new(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]] | None:
        """Vectors of texts about to be written; None when the model is not ready in time.

        A text some stored row was already embedded as reuses that vector; the others join
        the next model call, shared with every write embedding at the same time (as
        `index_new` batches committed rows).
        """
        embedder = await self.embedder_within(self.model_wait)
        if embedder is None or self._closed or not texts:
            return None
        hashes = [content_hash(t) for t in texts]
        self._arriving += 1
        try:
            known = await self.vectors.vectors_by_hash(hashes)
            loop = asyncio.get_running_loop()
            waiting: dict[str, asyncio.Future[npt.NDArray[np.float32]]] = {}
            # Queued shortest first: the queue is embedded `batch_size` texts a model call, each
            # call padded to its longest text, and a batched append's texts in arrival order
            # embedded 15-35 % slower than sorted (500 texts, 64 a call); other writes' texts
            # still queue behind these, so no text waits on later ones.
            for digest, text in sorted(zip(hashes, texts, strict=True), key=lambda p: len(p[1])):
                if digest not in known and digest not in waiting:
                    waiting[digest] = loop.create_future()
                    self._texts.append((text, waiting[digest]))
        finally:
            self._arriving -= 1
            if self._moved is not None:
                self._moved.set()
        if waiting and (self._text_drainer is None or self._text_drainer.done()):
            self._text_drainer = asyncio.create_task(self._drain_texts(embedder))
        for digest, future in waiting.items():
            known[digest] = await future
        return [known[h] for h in hashes]

    async def _drain_texts(self, embedder: Embedder) -> None:
        async def gather() -> None:
            # Trigger: other writes started and are still reading the store before they queue
            # their text. Why: embedding now would leave each of them a model call of its own.
            # Outcome: wait for them, a few milliseconds at most (a lone write never waits).
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _GATHER_S
            while self._arriving and len(self._texts) < self.batch_size:
                left = deadline - loop.time()
                if left <= 0:
                    break
                moved = self._moved = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(moved.wait(), left)

        async def embed(texts: list[str]) -> Sequence[npt.NDArray[np.float32]]:
            vectors = await anyio.to_thread.run_sync(embedder.embed, texts)
            return [vectors[n] for n in range(len(texts))]

        await _drain(self._texts, self.batch_size, embed, gather)

    async def index_batch(self, memories: Sequence[Memory]) -> bool:
        """Embed and store vectors of freshly written rows, in one model call.

        Trigger: the model is not ready within `model_wait` (or the indexer is closing).
        Why: a batched append must not wait long for it. Outcome: nothing is embedded and
        False is returned; the rows are left for `backfill`, which runs once the model is ready.
        """
        if not memories:
            return False
        embedder = await self.embedder_within(self.model_wait)
        if embedder is None or self._closed or not memories:
            return False
        await self.index(memories, embedder)
        return True

    async def index_new(
        self, memory: Memory, *, duplicate_similarity: float
    ) -> NearDuplicate | None:
        """Index one freshly written row and report a near-duplicate in its project+layer.

        Trigger: the model is not ready within `model_wait`. Why: appends must not wait long
        for it. Outcome: the row is left for `backfill`, and no near-duplicate check is made.
        """
        embedder = await self.embedder_within(self.model_wait)
        if embedder is None or self._closed:
            return None
        future: asyncio.Future[npt.NDArray[np.float32]] = asyncio.get_running_loop().create_future()
        self._pending.append((memory, future))
        if self._drainer is None or self._drainer.done():
            # A task, not the caller: a cancelled append must not strand the others' batch.
            self._drainer = asyncio.create_task(self._drain(embedder))
        vector = await future
        neighbours: list[VectorMatch] = await self.vectors.search_vectors(
            memory.project, vector, layer=memory.layer, limit=2
        )
        for n in neighbours:
            similarity = 1.0 - n.distance
            if n.id != memory.id and similarity >= duplicate_similarity:
                return NearDuplicate(id=n.id, similarity=round(similarity, 4))
        return None

    async def _drain(self, embedder: Embedder) -> None:
        async def embed(memories: list[Memory]) -> Sequence[npt.NDArray[np.float32]]:
            return await self.index(memories, embedder)

        await _drain(self._pending, self.batch_size, embed)

    def schedule_backfill(self) -> None:
        """Embed, in the background, every row still without a vector (if the model is ready).

        Called when the model becomes ready, after compaction, and after an indexing failure,
        so a row that missed its vector gets one without a restart or `reindex`.
        """
        embedder = self.source.current()
        if embedder is None or self._closed:
            return
        if self._backfiller is not None and not self._backfiller.done():
            self._again = True  # its last look may have come before these rows (`backfill`)
            return
        self._backfiller = asyncio.create_task(self._backfill_quietly(embedder))

    def backfill_when_ready(self) -> None:
        """At start-up: embed every row still without a vector once the model has loaded.

        Such rows come from imports, from writes while no model was loaded, and from failed
        indexing. This does not start the load (it waits for one, now or at first use), and
        searches can wait for it (`backfill_settled`).
        """
        if self._closed:
            return
        if self._backfiller is not None and not self._backfiller.done():
            self._again = True
            return
        self._backfiller = asyncio.create_task(self._backfill_once_ready())

    async def _backfill_once_ready(self) -> None:
        embedder = await self.source.until_ready()
        if embedder is not None and not self._closed:
            await self._backfill_quietly(embedder)
        # A failed load is logged by the loader; search keeps working by keyword and says so.

    async def aclose(self) -> None:
        """Stop background work (before the store closes); pending appends get an error.

        After this, appends are no longer indexed and no backfill starts.
        """
        self._closed = True
        for task in (self._backfiller, self._drainer, self._text_drainer):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for _, future in [*self._pending, *self._texts]:
            if not future.done():
                future.set_exception(_shutting_down())
        self._pending.clear()
        self._texts.clear()

    async def _backfill_quietly(self, embedder: Embedder) -> None:
        try:
            await self.backfill(embedder)
        except Exception:
            log.exception("vectors.backfill_failed")

    async def backfill(
        self,
        embedder: Embedder,
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed every row that has no vector yet, in batches; returns how many were indexed.

        Trigger: rows written, and a backfill asked for (a hook's `index`), after the running
        one found none left but before it ended. Why: `schedule_backfill` does not start a
        second one while one runs, so those rows would wait for the next start-up. Outcome: a
        request that comes while this one looks for rows makes it look once more.
        Each batch's vectors are stored in one transaction (`put_vectors`) and only rows
        without a vector are read, so a backfill killed anywhere and started again embeds
        each row once, but for the batch that was being embedded when it was killed.
        """
        done = 0
        indexed, total = await self.vectors.vector_stats()
        previous: list[int] = []
        while True:
            self._again = False
            rows = await self.vectors.missing_vectors(limit=batch_size)
            if not rows and self._again:
                continue
            if not rows or [m.id for m in rows] == previous:
                # The same rows again means each was rewritten while being embedded; the
                # next backfill (after those writes settle) picks them up.
                break
            previous = [m.id for m in rows]
            await self.index(rows, embedder)
            done += len(rows)
            if progress is not None:
                progress(done, max(total, done))
        if done:
            log.info("vectors.backfilled", rows=done, already_indexed=indexed)
        return done
