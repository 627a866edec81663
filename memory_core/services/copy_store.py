"""Copy every memory (rows, ids, embeddings, model record) from one store into another.

Used by `memstrata copy-store` to move between SQLite and PostgreSQL. The target must be
empty: ids are kept (clients hold them), so a non-empty target could collide, and the final
verification compares counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import CopyEndpoint

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

    @property
    def verified(self) -> bool:
        """Whether the target holds exactly what the source held."""
        return (self.memories, self.embeddings) == (self.target_memories, self.target_embeddings)


async def copy_store(
    source: CopyEndpoint,
    target: CopyEndpoint,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = BATCH,
) -> CopyReport:
    """Copy every row and vector from `source` into the empty `target`, then verify counts.

    Args:
        source: The store read from (not changed).
        target: An empty store (migrated, possibly with the same model recorded).
        progress: Called with (rows copied, rows in total) after each batch.
        batch: Rows per transaction.

    Raises:
        InvalidInputError: The target already holds memories.
        SchemaMismatchError: The target records another embedding model.
    """
    existing, _ = await target.counts()
    if existing:
        raise InvalidInputError(
            "to", f"the target store already holds {existing} memories; copy into an empty one"
        )
    total, vectors = await source.counts()
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
    target_rows, target_vectors = await target.counts()
    return CopyReport(
        memories=total,
        embeddings=vectors,
        target_memories=target_rows,
        target_embeddings=target_vectors,
        model=model[0] if model else None,
    )
