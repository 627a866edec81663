"""Copy every store from one database into another, ids and embeddings kept.

The memories (rows, ids, embeddings, model record), then the conversations, the tool cache,
scratchpad, preferences, playbooks and documents with their chunks and vectors.

Used by `memstrata copy-store` to move between SQLite and PostgreSQL. The target must be
empty: ids are kept (clients hold them), so a non-empty target could collide, and the final
verification compares counts, store by store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import TABLES, CopyEndpoint, MemoryTransfer

__all__ = ["BATCH", "CopyReport", "copy_store"]

BATCH = 500


@dataclass(frozen=True)
class CopyReport:
    """What was copied and whether the target's counts match the source's."""

    memories: int
    embeddings: int
    target_memories: int
    target_embeddings: int
    model: str | None
    # The other stores, by record kind: (rows in the source, rows in the target).
    stores: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """Whether the target holds exactly what the source held, in every store."""
        same = (self.memories, self.embeddings) == (self.target_memories, self.target_embeddings)
        return same and all(there == here for there, here in self.stores.values())


async def copy_store(
    source: CopyEndpoint,
    target: CopyEndpoint,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = BATCH,
    stores: tuple[MemoryTransfer, MemoryTransfer] | None = None,
) -> CopyReport:
    """Copy every row and vector from `source` into the empty `target`, then verify counts.

    Args:
        source: The store read from (not changed).
        target: An empty store (migrated, possibly with the same model recorded).
        progress: Called with (rows copied, rows in total) after each batch.
        batch: Rows per transaction.
        stores: The same two databases' row transfer (source, target): every other store
            (conversations, scratchpad, preferences, playbooks, documents) is copied too.

    Raises:
        InvalidInputError: The target already holds memories, or rows of another store.
        SchemaMismatchError: The target records another embedding model.
    """
    existing, _ = await target.counts()
    if existing:
        raise InvalidInputError(
            "to", f"the target store already holds {existing} memories; copy into an empty one"
        )
    others = await _other_counts(stores)
    for kind, (_, there) in others.items():
        if there:
            raise InvalidInputError(
                "to", f"the target store already holds {there} {kind} rows; copy into an empty one"
            )
    total, vectors = await source.counts()
    total += sum(here for here, _ in others.values())
    model = await source.model()
    await target.prepare(model)
    done, last = 0, 0
    if progress:
        progress(0, total)
    while True:
        rows = await source.read(last, batch)
        if not rows:
            break
        await target.write(rows)
        done += len(rows)
        last = rows[-1][0].id
        if progress:
            progress(done, total)
    await target.finish()
    if stores is not None:
        done = await _copy_rows(*stores, batch=batch, done=done, total=total, progress=progress)
    target_rows, target_vectors = await target.counts()
    return CopyReport(
        memories=total - sum(here for here, _ in others.values()),
        embeddings=vectors,
        target_memories=target_rows,
        target_embeddings=target_vectors,
        model=model[0] if model else None,
        stores=await _other_counts(stores),
    )


async def _other_counts(
    stores: tuple[MemoryTransfer, MemoryTransfer] | None,
) -> dict[str, tuple[int, int]]:
    """(source rows, target rows) of every store but the memories."""
    if stores is None:
        return {}
    source, target = stores
    return {
        spec.kind: (
            await source.count_rows(spec.kind, None),
            await target.count_rows(spec.kind, None),
        )
        for spec in TABLES
        if spec.kind != "memory"
    }


async def _copy_rows(
    source: MemoryTransfer,
    target: MemoryTransfer,
    *,
    batch: int,
    done: int,
    total: int,
    progress: Callable[[int, int], None] | None,
) -> int:
    """Every other store, kind by kind (parents first), keeping ids, a batch a transaction."""
    for spec in TABLES:
        if spec.kind == "memory":
            continue
        after: tuple[Any, ...] | None = None
        while rows := await source.export_rows(spec.kind, None, after=after, limit=batch):
            # Into an empty target nothing is refused; a refused row shows in the counts.
            await target.insert_rows(spec.kind, rows, keep_ids=True)
            after = tuple(rows[-1][k] for k in spec.key)
            done += len(rows)
            if progress:
                progress(done, total)
    await target.finish_import()
    return done
