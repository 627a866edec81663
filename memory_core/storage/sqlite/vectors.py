"""SqliteVectorIndex: the VectorIndex port on sqlite-vec, partitioned by project."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog

from memory_core.domain.models import Layer, Memory, VectorMatch
from memory_core.storage.records import model_recorded
from memory_core.storage.sqlite.session import SqliteSession
from memory_core.storage.sqlite.sign_lists import SignLists, list_count

if TYPE_CHECKING:
    from memory_core.ports.embeddings import Vector

# numpy is imported where vectors are handled, not at the top: every process that opens the
# store builds this index, and the hooks and keyword-only CLI commands never search vectors
# (numpy costs ~120 ms of a cold start; tests/server/test_import_boundaries.py holds the line).

__all__ = ["EXACT_SEARCH_MAX", "SqliteVectorIndex"]

log = structlog.get_logger(__name__)

# Below this many vectors in a project, exact float32 KNN (vec0) is fast enough (about 4 ms per
# 10k on this machine kind, stack.md §1); above it, a bit-quantised coarse pass (in numpy, see
# _CoarseBits) over COARSE_FACTOR x more candidates plus an exact rescore. Measured at 80k rows
# (bench/scale.py vectors, top 10 of a 50-candidate search against numpy exact): factor 8:
# recall 0.934 in 3.6 ms; 12: 0.960 in 5.0 ms; 20: 0.984 in 6.0 ms; 40: 0.995 in 9.4 ms.
EXACT_SEARCH_MAX = 20_000
COARSE_FACTOR = 12
COARSE_MIN = 200
KNN_MAX = 4096  # sqlite-vec refuses a larger k
_COUNT_TTL_S = 30.0


_COARSE_RELOAD_S = 30.0
_LOAD_CHUNK = 5_000

# The coarse candidates are narrowed in memory to at most this many per result asked (at
# least RESCORE_MIN; fewer where the int8 error bound allows, `_reachable`) before the exact
# float32 rescore reads them from the table (issue 21): each read is a B-tree lookup of a
# 1.5 KB row (~6 us; 600 of them were 3.6 ms of a 100k search), while scoring the candidates
# on an int8 copy of their vectors costs ~0.3 ms for 600. The copy takes 388 bytes a row, so
# it is kept only for projects up to PRECISE_MAX_ROWS rows (~97 MB at the cap); larger
# projects rescore every coarse candidate from the table.
RESCORE_FACTOR = 3
RESCORE_MIN = 100
PRECISE_MAX_ROWS = 250_000
# Projects without the int8 copy check a batch for look-alikes through SignLists: each text
# scans the rows of its LISTS_PROBED nearest lists, and its LISTED_RESCORE nearest of them by
# Hamming distance are scored exactly from the table (how often that misses: `_best_listed`).
LISTS_PROBED = 16
LISTED_RESCORE = 32
# How far below a similarity an int8 approximation may fall and its row still be scored
# exactly (`any_close`): the int8 copy's cosine error stays under ~0.015.
_INT8_MARGIN = 0.05


class _CoarseBits:
    """One project's sign bits (vec_quantize_binary's layout) in memory, with ids and layers.

    sqlite-vec 0.1.9's KNN keeps its top k in a way that costs O(n * k): at 80k rows a bit
    KNN takes 2.9 ms for k=10 but 134 ms for k=1,000 (f32 k=50: 54 ms). Hamming distances
    over packed words in numpy cost a small fraction of the numpy exact-search reference,
    whatever the k, so the coarse pass of large projects runs here; the exact rescore stays
    in SQLite. 48 bytes a row for 384 dims (48 MB per million).

    With `dims`, it also keeps each row as int8 (scaled by the row's largest component, plus
    that scale): `candidates` then narrows the coarse pass's rows by their approximate
    cosine before the exact rescore (see RESCORE_FACTOR).
    """

    def __init__(self, nbytes: int, version: int, dims: int | None = None) -> None:
        import numpy as np

        # The widest word that divides a row, so popcounts run on as few elements as possible.
        self.dtype = next(
            t for t in (np.uint64, np.uint32, np.uint16, np.uint8) if nbytes % t().itemsize == 0
        )
        self.width = nbytes // np.dtype(self.dtype).itemsize
        self.nbits = nbytes * 8  # the largest Hamming distance
        self.size = 0
        # Buffers grow by half when full, so appending one row is not a copy of them all.
        self._ids = np.zeros(0, dtype=np.int64)
        self._layers = np.zeros(0, dtype=np.int8)
        # Word-major (width, capacity): each popcount pass runs over one contiguous array.
        self._words = np.zeros((self.width, 0), dtype=self.dtype)
        # Row-major (capacity, dims): a candidate's row is one contiguous gather.
        self.dims = dims
        self._int8 = np.zeros((0, dims or 0), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self.lists: SignLists | None = None  # filed rows, for projects without the int8 copy
        self.top = 0  # highest id loaded from the table (own writes are added as they happen)
        self.loaded_at = time.monotonic()
        self.version = version  # PRAGMA data_version when last brought up to date

    def reserve(self, capacity: int) -> None:
        """Make room for `capacity` rows in one allocation.

        Trigger: a whole project is about to be loaded. Why: growing by half while loading
        800k rows kept the old and new buffers alive together (~60 MB at the last step).
        Outcome: the load allocates its buffers once.
        """
        import numpy as np

        if capacity <= self._ids.size:
            return
        self._ids = np.resize(self._ids, capacity)
        self._layers = np.resize(self._layers, capacity)
        words = np.zeros((self.width, capacity), dtype=self.dtype)
        words[:, : self.size] = self._words[:, : self.size]
        self._words = words
        if self.dims is not None:
            rows = np.zeros((capacity, self.dims), dtype=np.int8)
            rows[: self.size] = self._int8[: self.size]
            self._int8 = rows
            self._scale = np.resize(self._scale, capacity)

    def add(
        self, ids: Sequence[int], layers: Sequence[str], bits: bytes, vectors: bytes = b""
    ) -> None:
        """Append rows: ids, layer names, packed bits and float32 vectors, in the same order.

        `vectors` (the rows' float32 blobs, joined) is needed only with `dims`.
        """
        import numpy as np

        if not ids:
            return
        n, end = len(ids), self.size + len(ids)
        if end > self._ids.size:
            self.reserve(max(end, self._ids.size + self._ids.size // 2, 1024))
        self._ids[self.size : end] = ids
        self._layers[self.size : end] = [_LAYER_CODES.get(name, -1) for name in layers]
        self._words[:, self.size : end] = (
            np.frombuffer(bits, dtype=self.dtype).reshape(n, self.width).T
        )
        if self.dims is not None:
            floats = np.frombuffer(vectors, dtype=np.float32).reshape(n, self.dims)
            peak = np.abs(floats).max(axis=1)
            scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
            self._int8[self.size : end] = np.rint(floats / scale[:, None]).astype(np.int8)
            self._scale[self.size : end] = scale
        self.size = end
        self.top = max(self.top, max(ids))

    def nearest(self, query: bytes, layer: str | None, count: int) -> list[int]:
        """Ids of (about) the `count` rows nearest to `query` bits by Hamming distance."""
        import numpy as np

        return [int(i) for i in np.unique(self._ids[self._nearest_rows(query, layer, count)])]

    def candidates(
        self, query: Vector, layer: str | None, count: int, keep: int, wanted: int | None = None
    ) -> list[int]:
        """Ids to rescore: the `count` rows nearest by Hamming distance, narrowed.

        With the int8 copy, only the `keep` of them with the highest approximate cosine are
        returned; without it, all `count`. With `wanted` as well, fewer when the int8 copy's
        error bound proves that the others cannot be among the `wanted` nearest of the
        `count` (see `_reachable`).
        """
        import numpy as np

        rows = self._nearest_rows(_bits([query]), layer, count)
        if self.dims is not None and rows.size > keep:
            q = np.asarray(query, dtype=np.float32)
            approx = (self._int8[rows].astype(np.float32) @ q) * self._scale[rows]
            reach = _reachable(approx, self._scale[rows], q, wanted) if wanted else None
            if reach is not None and reach.size <= keep:
                rows = rows[reach]
            else:
                rows = rows[np.argpartition(-approx, keep - 1)[:keep]]
        return [int(i) for i in np.unique(self._ids[rows])]

    def packed(self, start: int, stop: int) -> Any:
        """Rows' sign bits as vec_quantize_binary wrote them: a (rows, bytes) uint8 copy."""
        import numpy as np

        words = np.ascontiguousarray(self._words[:, start:stop].T)
        return words.view(np.uint8)

    def nearest_scanned(self, scanned: tuple[Any, Any, Any], layer: str | None, count: int) -> Any:
        """Positions of the `count` rows of `layer` nearest by a scan (SignLists.scan)."""
        distance, kinds, positions = scanned
        return positions[self._smallest_of(distance, kinds, layer, count)]

    def _nearest_rows(self, query: bytes, layer: str | None, count: int) -> Any:
        """Positions of the `count` rows nearest to `query` bits (an int array)."""
        import numpy as np

        q = np.frombuffer(query, dtype=self.dtype)
        distance = np.zeros(self.size, dtype=np.uint16)
        for word, bits in zip(self._words[:, : self.size], q, strict=True):
            distance += np.bitwise_count(word ^ bits)
        return self._smallest_of(distance, self._layers[: self.size], layer, count)

    def _smallest_of(self, distance: Any, layers: Any, layer: str | None, count: int) -> Any:
        """Indexes into `distance` of the `count` smallest of rows of `layer` (`layers`: codes)."""
        code = None if layer is None else _LAYER_CODES.get(layer, -2)
        found = _smallest_sampled(distance, layers, code, count, self.nbits)
        return found if found is not None else _smallest(distance, layers, code, count, self.nbits)


_LAYER_CODES = {layer.value: code for code, layer in enumerate(Layer)}

# Stored and query vectors are unit length (the Embedder port), but float32 rounding, and
# vectors imported from another writer, may leave a norm a little off 1: this much more cosine
# is allowed for on each side of a row's int8 bound.
_NORM_SLACK = 2e-3


# One distance in this many is counted to find where the `count` smallest end (`_smallest_sampled`).
_SAMPLE_STEP = 16


def _smallest(distance: Any, layers: Any, code: int | None, count: int, nbits: int) -> Any:
    """Positions of the `count` smallest distances, of rows of layer `code` when one is given.

    Every row under the count-th smallest distance, then as many rows at it as the count
    leaves, in position order. A distance is at most `nbits`, so the count-th smallest comes
    from a histogram (argpartition of 80k distances cost ~1 ms, two thirds of a batch's
    duplicate check, `any_close`).
    """
    import numpy as np

    if code is not None:
        outside = layers != code
        distance = distance.copy()
        distance[outside] = nbits + 1
        count = min(count, distance.size - int(outside.sum()))
    count = min(count, distance.size)
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    reach = int(np.searchsorted(np.cumsum(np.bincount(distance, minlength=nbits + 2)), count))
    below = np.flatnonzero(distance < reach)
    return np.concatenate([below, np.flatnonzero(distance == reach)[: count - below.size]])


def _smallest_sampled(
    distance: Any, layers: Any, code: int | None, count: int, nbits: int
) -> Any | None:
    """`_smallest`, from the rows under a bound a sample sets; None when the bound is too low.

    Trigger: every coarse pass. Why: `_smallest` reads every distance three times (a
    histogram of them cast to 64-bit ints, then the rows under and at the cut) and the layer
    filter three more; at 800k rows that was 1.5 of the pass's 3.5 ms, paid for each text of
    a batched append's duplicate check. Outcome: one distance in _SAMPLE_STEP (of the layer)
    sets a bound that about twice `count` rows fall under; one comparison finds those rows,
    and `_smallest` over them alone gives the same positions, since every row of the layer
    at or under the bound is among them and the count-th smallest is at or under it. When
    fewer than `count` rows fall under the bound, None: the caller counts them all.
    """
    import numpy as np

    if count <= 0 or distance.size < _SAMPLE_STEP * count:
        return None
    sample = distance[::_SAMPLE_STEP]
    if code is not None:
        sample = sample[layers[::_SAMPLE_STEP] == code]
    under = np.cumsum(np.bincount(sample, minlength=nbits + 2))
    bound = int(np.searchsorted(under, 2 * count // _SAMPLE_STEP + 8))
    rows = np.flatnonzero(distance <= bound)
    if code is not None:
        rows = rows[layers[rows] == code]
    if rows.size < count:
        return None
    return rows[_smallest(distance[rows], layers[rows], None, count, nbits)]


def _reachable(approx: Any, scale: Any, query: Any, wanted: int) -> Any:
    """Positions of the rows whose exact cosine may be among the `wanted` highest.

    Each int8 component is within half its row's `scale` of the float32 one, so a row's
    approximate cosine is within `scale / 2 * sum(|query|)` of its exact one (about 0.01 for
    MiniLM rows). A row whose highest possible cosine is below the `wanted`-th highest lowest
    possible one has `wanted` rows certainly above it, so the exact rescore need not read it
    and still finds the exact `wanted` best of the candidates, from fewer table reads (issue
    37: at 100k rows a search read 92 rows instead of 150 by the median, with the same hits
    in 500 of 500 searches; each read is a B-tree lookup, and a disk read when the page cache
    is cold).
    """
    import numpy as np

    if approx.size <= wanted:
        return np.arange(approx.size)
    bound = scale * (float(np.abs(query).sum()) / 2) + _NORM_SLACK
    lowest = approx - bound
    floor = np.partition(lowest, approx.size - wanted)[approx.size - wanted]
    return np.flatnonzero(approx + bound >= floor)


def _bits(vectors: Sequence[Vector]) -> bytes:
    """vec_quantize_binary of each vector (bit i of byte j is dimension 8j+i > 0), joined."""
    import numpy as np

    return b"".join(np.packbits(np.asarray(v) > 0, bitorder="little").tobytes() for v in vectors)


def _blob(vector: Vector) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector(blob: bytes) -> Vector:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32).copy()


def _vec0_statements(dims: int) -> tuple[str, str]:
    """The vec0 table and the trigger that drops a vector with its row's embedding."""
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS context_vectors USING vec0("
        " id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, layer TEXT,"
        f" embedding FLOAT[{dims}] distance_metric=cosine)",
        "CREATE TRIGGER IF NOT EXISTS context_vectors_ad AFTER DELETE ON context_embeddings"
        " BEGIN DELETE FROM context_vectors WHERE id = old.id; END",
    )


class SqliteVectorIndex:
    """Vectors in two tables and one in-memory array, each for one job.

    - `context_embeddings` (plain table): the source of truth, exact rescoring, reuse by hash;
    - `context_vectors` (vec0 float32, partition key `project`): exact KNN for small projects;
    - `_CoarseBits` (memory, per project): the coarse pass for large ones.

    Once a project has grown past `exact_max` it is listed in `vector_coarse_projects` and
    keeps no vec0 rows: its searches never read them, and at 1M rows a vec0 delete cost
    ~270 us a row (each clears bytes inside a 1.5 MB chunk blob), most of what pruning cost.
    A listed project stays on the coarse path even if it shrinks (below COARSE_MIN rows
    that path rescores every row, so it is exact again).

    The vec0 table is sized by the model's dimensions, so it is created here (not by a
    migration) together with the triggers that drop vectors of deleted or rewritten rows.
    Stores written before the coarse pass moved to memory also hold `context_vectors_bit`
    (vec0 bit); it is dropped on open, since keeping it cost a vec0 insert and delete per row.
    """

    def __init__(self, session: SqliteSession, *, exact_max: int = EXACT_SEARCH_MAX) -> None:
        self._session = session
        self._exact_max = exact_max
        self._counts: dict[str, tuple[float, int]] = {}
        self._coarse: dict[str, _CoarseBits] = {}
        self._listed: set[str] = set()  # projects known to keep no vec0 rows
        # Each project's last centres and the size they were trained at, kept over reloads
        # (not the lists: those hold a copy of the bits).
        self._centres: dict[str, tuple[Any, int]] = {}
        self._listing = asyncio.Lock()

    async def _meta(self) -> dict[str, str]:
        rows = await self._session.fetch("SELECT key, value FROM meta")
        return {str(r[0]): str(r[1]) for r in rows}

    async def ensure_model(self, model_id: str, dims: int) -> None:
        """Record the model on first use; refuse a store written by another model."""
        async with self._session.write("checking the embedding model") as db:
            meta = await self._meta()
            if not model_recorded(meta, model_id, dims):
                await self._record_model(db, model_id, dims)
            await self._create_tables(db, dims)

    async def reset_model(self, model_id: str, dims: int) -> None:
        """Drop every vector and record a new model."""
        async with self._session.write("resetting the vector index") as db:
            # One statement at a time: executescript would commit the transaction first.
            for statement in (
                "DROP TRIGGER IF EXISTS context_vectors_ad",
                "DROP TRIGGER IF EXISTS context_vectors_au",
                "DROP TABLE IF EXISTS context_vectors",
                "DROP TABLE IF EXISTS context_vectors_bit",
                "DELETE FROM context_embeddings",
            ):
                await db.execute(statement)
            await self._record_model(db, model_id, dims)
            await self._create_tables(db, dims)
        self._counts.clear()
        self._coarse.clear()

    async def _record_model(self, db: Any, model_id: str, dims: int) -> None:
        await db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("embedding_model", model_id), ("embedding_dims", str(dims))],
        )

    async def _create_tables(self, db: Any, dims: int) -> None:
        legacy = await self._session.fetch(
            "SELECT 1 FROM sqlite_master WHERE name = 'context_vectors_bit'"
        )
        if legacy:
            # The old delete trigger names the bit table: replace it before dropping that.
            await db.execute("DROP TRIGGER IF EXISTS context_vectors_ad")
            await db.execute("DROP TABLE context_vectors_bit")
        had_vec0 = bool(
            await self._session.fetch("SELECT 1 FROM sqlite_master WHERE name = 'context_vectors'")
        )
        for statement in (
            *_vec0_statements(dims),
            # vec0 partition and metadata columns must follow the row if a backend ever moves
            # rows between layers; today only deletes and rewrites happen.
            "CREATE TRIGGER IF NOT EXISTS context_vectors_au AFTER UPDATE OF layer, project"
            " ON context_snapshots BEGIN DELETE FROM context_embeddings WHERE id = new.id; END",
            "CREATE TABLE IF NOT EXISTS vector_coarse_projects (project TEXT PRIMARY KEY)"
            " WITHOUT ROWID",
        ):
            await db.execute(statement)
        if (await self._meta()).get("vec0_large_projects") != "coarse":
            if had_vec0:
                await self._move_large_projects_out(db, dims)
            await db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('vec0_large_projects', 'coarse')"
            )

    async def _move_large_projects_out(self, db: Any, dims: int) -> None:
        """List a store's large projects as coarse and drop their vec0 rows (once, on upgrade).

        Trigger: a store written when vec0 held every project. Why: deleting a large
        partition row by row costs minutes at 1M rows. Outcome: the vec0 table is rebuilt
        from the small projects' vectors alone (one insert per kept row).
        """
        large = await self._session.fetch(
            "SELECT project FROM context_snapshots GROUP BY project HAVING count(*) > ?",
            (self._exact_max,),
        )
        if not large:
            return
        await db.executemany(
            "INSERT OR IGNORE INTO vector_coarse_projects (project) VALUES (?)",
            [(str(r[0]),) for r in large],
        )
        await db.execute("DROP TRIGGER IF EXISTS context_vectors_ad")
        await db.execute("DROP TABLE context_vectors")
        for statement in _vec0_statements(dims):
            await db.execute(statement)
        await db.execute(
            "INSERT INTO context_vectors (id, project, layer, embedding)"
            " SELECT e.id, s.project, s.layer, e.embedding"
            " FROM context_embeddings AS e JOIN context_snapshots AS s ON s.id = e.id"
            " WHERE s.project NOT IN (SELECT project FROM vector_coarse_projects)"
        )
        # Once per store, and it holds the write lock meanwhile: say why start-up waited.
        log.info("vectors.large_projects_moved", projects=len(large), exact_max=self._exact_max)

    async def _coarse_listed(self, projects: Sequence[str]) -> set[str]:
        """Those of `projects` that keep no vec0 rows (a listing is never undone)."""
        unknown = [p for p in projects if p not in self._listed]
        if unknown:
            rows = await self._session.fetch(
                "SELECT project FROM vector_coarse_projects"
                f" WHERE project IN ({', '.join('?' for _ in unknown)})",
                unknown,
            )
            self._listed.update(str(r[0]) for r in rows)
        return {p for p in projects if p in self._listed}

    async def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors for these content hashes."""
        if not hashes:
            return {}
        unique = sorted(set(hashes))
        marks = ", ".join("?" for _ in unique)
        async with self._session.read("reading vectors"):
            rows = await self._session.fetch(
                "SELECT text_hash, embedding FROM context_embeddings"
                f" WHERE text_hash IN ({marks}) GROUP BY text_hash",
                unique,
            )
        return {str(r[0]): _vector(r[1]) for r in rows}

    async def put_vectors(self, items: Sequence[tuple[Memory, str, Vector]]) -> None:
        """Store vectors of rows whose text is still the text that was embedded.

        Trigger: a row deleted or rewritten while its old text was being embedded (a backfill
        racing an upsert, two upserts in one batch). Why: writing that vector would leave the
        row searchable under words it no longer holds, and nothing would ever re-embed it.
        Outcome: such items are skipped; a rewritten row keeps (or later gets) the vector of
        its current text. The last item wins when one id appears twice.
        """
        latest = {m.id: (m, h, v) for m, h, v in items}
        if not latest:
            return
        async with self._session.write("storing vectors") as db:
            marks = ", ".join("?" for _ in latest)
            current = {
                int(r[0]): (str(r[1]), r[2])
                for r in await self._session.fetch(
                    f"SELECT id, content_hash, key FROM context_snapshots WHERE id IN ({marks})",
                    list(latest),
                )
            }
            rows = [
                (m, h, _blob(v))
                for m, h, v in latest.values()
                if current.get(m.id) == (m.content_hash, m.key)
            ]
            await db.executemany(
                "DELETE FROM context_embeddings WHERE id = ?", [(m.id,) for m, _, _ in rows]
            )
            await db.executemany(
                "INSERT INTO context_embeddings (id, text_hash, embedding) VALUES (?, ?, ?)",
                [(m.id, h, b) for m, h, b in rows],
            )
            touched = sorted({m.project for m, _, _ in rows})
            listed = await self._coarse_listed(touched)
            await db.executemany(
                "INSERT INTO context_vectors (id, project, layer, embedding) VALUES (?, ?, ?, ?)",
                [
                    (m.id, m.project, m.layer.value, b)
                    for m, _, b in rows
                    if m.project not in listed
                ],
            )
            for m, _, _ in rows:
                # Counted, not forgotten: recounting a large project costs ~4 ms per 80k rows
                # and the count only picks the search path (deletes are caught by the TTL).
                cached = self._counts.get(m.project)
                if cached is not None:
                    self._counts[m.project] = (cached[0], cached[1] + 1)
            for project in touched:
                if project in listed or await self._project_size(project) <= self._exact_max:
                    continue
                # The cached size is an estimate (re-embedded and upserted rows count again),
                # and listing is for good: recount before deciding.
                if await self._project_size(project, fresh=True) > self._exact_max:
                    # The project just outgrew exact search: from now on it keeps no vec0
                    # rows (a one-off delete of about `exact_max` rows at 40-100 us each).
                    await db.execute(
                        "INSERT OR IGNORE INTO vector_coarse_projects (project) VALUES (?)",
                        (project,),
                    )
                    await db.execute("DELETE FROM context_vectors WHERE project = ?", (project,))
        for project, coarse in self._coarse.items():
            # Own writes go straight into the in-memory bits (a backfill writes old ids,
            # which the reload-above-`top` of other connections' writes would miss).
            mine = [(m, b) for m, _, b in rows if m.project == project]
            coarse.add(
                [m.id for m, _ in mine],
                [m.layer.value for m, _ in mine],
                _bits([_vector(b) for _, b in mine]),
                b"".join(b for _, b in mine),
            )

    async def _project_size(self, project: str, *, fresh: bool = False) -> int:
        """The project's row count, cached for _COUNT_TTL_S unless `fresh`."""
        cached = self._counts.get(project)
        if not fresh and cached is not None and time.monotonic() - cached[0] < _COUNT_TTL_S:
            return cached[1]
        rows = await self._session.fetch(
            "SELECT count(*) FROM context_snapshots WHERE project = ?", (project,)
        )
        size = int(rows[0][0])
        self._counts[project] = (time.monotonic(), size)
        return size

    async def search_vectors(
        self, project: str, vector: Vector, *, layer: Layer | None, limit: int
    ) -> list[VectorMatch]:
        """Nearest rows of one project: exact for small projects, coarse + rescore for large."""
        params: dict[str, Any] = {"q": _blob(vector), "project": project, "k": min(limit, KNN_MAX)}
        layer_filter = ""
        if layer is not None:
            layer_filter = " AND layer = :layer"
            params["layer"] = layer.value
        async with self._session.read("vector search"):
            if await self._project_size(project) > self._exact_max:  # cached, with a TTL
                # No transaction: the bits are brought up to date first, and the rescore
                # reads each candidate by id (two hops fewer than a snapshot, per search).
                rows = await self._coarse_search(project, vector, layer, limit, params["q"])
                return [VectorMatch(id=int(r[0]), distance=float(r[1])) for r in rows]
        # One read transaction: another process may list the project and drop its vec0 rows
        # between the listing check and the KNN, which must then see the same snapshot.
        async with self._session.snapshot("vector search"):
            if await self._coarse_listed([project]):
                rows = await self._coarse_search(project, vector, layer, limit, params["q"])
            else:
                # A project that shrank (cleared, pruned) below the threshold frees its bits.
                self._coarse.pop(project, None)
                rows = await self._session.fetch(
                    "SELECT id, distance FROM context_vectors WHERE embedding MATCH :q"
                    f" AND k = :k AND project = :project{layer_filter} ORDER BY distance",
                    params,
                )
        return [VectorMatch(id=int(r[0]), distance=float(r[1])) for r in rows]

    async def _coarse_search(
        self, project: str, vector: Vector, layer: Layer | None, limit: int, blob: bytes
    ) -> list[Any]:
        """(id, distance) of the nearest rows by the coarse bits and an exact rescore."""
        coarse = await self._coarse_bits(project, len(vector))
        wanted = min(limit, KNN_MAX)
        narrow = (
            vector,
            layer.value if layer is not None else None,
            max(limit * COARSE_FACTOR, COARSE_MIN),
            max(limit * RESCORE_FACTOR, RESCORE_MIN),
        )
        ids = coarse.candidates(*narrow, wanted)
        scored = await self._rescore(ids, blob)
        if len(scored) < min(wanted, len(ids)):
            # Trigger: candidates deleted since the bits were loaded took places the int8
            # bound kept for them. Outcome: the rescore reads every candidate the cap allows,
            # as it did before the bound, so deletions never cost a search its hits.
            wider = coarse.candidates(*narrow)
            if len(wider) > len(ids):
                ids, scored = wider, await self._rescore(wider, blob)
        if len(scored) < len(ids) // 2:
            # Trigger: most candidates were deleted since the bits were loaded (this
            # connection's own deletes do not move PRAGMA data_version). Outcome:
            # the next search reloads the project's bits from the table.
            self._coarse.pop(project, None)
        return scored[:wanted]

    async def _rescore(self, ids: Sequence[int], blob: bytes) -> list[Any]:
        """(id, exact cosine distance) of each of `ids` still stored, nearest first.

        Each candidate's float32 vector is read by id; rows deleted since the bits were
        loaded are simply not found, so the caller also counts the missing ones.
        """
        return await self._session.fetch(
            "SELECT id, vec_distance_cosine(embedding, :q) AS distance"
            f" FROM context_embeddings WHERE id IN ({', '.join(map(str, ids)) or 'NULL'})"
            " ORDER BY distance",
            {"q": blob},
        )

    async def any_close(
        self,
        project: str,
        layer: Layer | None,
        vectors: Sequence[Vector],
        *,
        min_similarity: float,
        neighbours: int,
    ) -> list[bool]:
        """For each vector: may a stored row of the project (and layer) be that close to it?

        Trigger: a batch of new texts checked for duplicates before it is written. Why: one
        `search_vectors` per text cost more than embedding the batch (at 16k rows, 24 ms a
        text on a loaded machine; 500 appends: 12 s of searches against 8.6 s of model).
        Outcome: one pass for the whole batch. False means no row is that close among the
        rows `search_vectors(limit=neighbours)` would consider, so a per-text search would
        find none either; True means one may be (a per-text search decides). Small projects
        are scanned exactly in chunks; large ones use the coarse candidates `search_vectors`
        rescores, narrowed by their int8 copy with a margin well above its error (~0.015),
        then scored exactly. In a project too large for the int8 copy, False is a measured
        likelihood rather than a certainty (`_best_listed`).
        """
        import numpy as np

        if not vectors:
            return []
        queries = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
        layer_value = layer.value if layer is not None else None
        unlisted: _CoarseBits | None = None  # bits without the int8 copy
        async with self._session.snapshot("checking for close vectors"):
            size = await self._project_size(project)
            if size <= self._exact_max and not await self._coarse_listed([project]):
                best = await self._best_exact(project, layer_value, queries)
            else:
                coarse = await self._coarse_bits(project, queries.shape[1])
                if coarse.dims is None:
                    unlisted = coarse
                else:
                    count = max(neighbours * COARSE_FACTOR, COARSE_MIN)
                    best = await self._best_coarse(
                        coarse, layer_value, queries, count, min_similarity
                    )
        if unlisted is not None:
            # Outside the snapshot: filing the rows takes seconds once, in a thread.
            best = await self._best_listed(project, unlisted, layer_value, queries)
        return [bool(b >= min_similarity) for b in best]

    async def _best_exact(self, project: str, layer: str | None, queries: Any) -> Any:
        """Each query's highest cosine over the project's rows (of `layer`), read in chunks."""
        import numpy as np

        best = np.full(len(queries), -1.0, dtype=np.float32)
        above = 0
        while True:
            # Driven by the project's rows (a small project of a large store must not walk
            # every embedding), in chunks so no more than one is held at a time.
            rows = await self._session.fetch(
                "SELECT s.id, e.embedding FROM context_snapshots AS s"
                " JOIN context_embeddings AS e ON e.id = s.id WHERE s.project = ?"
                " AND s.id > ? AND (? IS NULL OR s.layer = ?) ORDER BY s.id LIMIT ?",
                (project, above, layer, layer, _LOAD_CHUNK),
            )
            if not rows:
                return best
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            scores = matrix.reshape(len(rows), -1) @ queries.T
            best = np.maximum(best, scores.max(axis=0))
            above = int(rows[-1][0])

    async def _best_coarse(
        self, coarse: _CoarseBits, layer: str | None, queries: Any, count: int, floor: float
    ) -> Any:
        """Each query's highest exact cosine among its coarse candidates that may reach `floor`."""
        import numpy as np

        wanted: dict[int, list[int]] = {}
        for n, query in enumerate(queries):
            rows = coarse._nearest_rows(_bits([query]), layer, count)
            approx = (coarse._int8[rows].astype(np.float32) @ query) * coarse._scale[rows]
            for i in coarse._ids[rows[approx >= floor - _INT8_MARGIN]]:
                wanted.setdefault(int(i), []).append(n)
        return await self._best_of(wanted, queries)

    async def _best_of(self, wanted: dict[int, list[int]], queries: Any) -> Any:
        """Each query's highest exact cosine among the rows `wanted` lists it for (-1: none).

        `wanted` maps a row's id to the positions of the queries it is scored against; each
        row is read once, and rows deleted since the bits were loaded are simply not found.
        """
        import numpy as np

        best = np.full(len(queries), -1.0, dtype=np.float32)
        if wanted:
            scored = await self._session.fetch(
                "SELECT id, embedding FROM context_embeddings"
                f" WHERE id IN ({', '.join(map(str, wanted))})"
            )
            for row in scored:
                stored = np.frombuffer(row[1], dtype=np.float32)
                for n in wanted[int(row[0])]:
                    best[n] = max(best[n], float(stored @ queries[n]))
        return best

    async def _best_listed(
        self, project: str, coarse: _CoarseBits, layer: str | None, queries: Any
    ) -> Any:
        """Each query's highest exact cosine among its nearest rows of its nearest lists.

        Trigger: a batch checked for look-alikes in a project too large for the int8 copy.
        Why: a search per text scans every code and rescores 200 rows from the table (5-15 ms
        a text at 800k rows, by machine: more than the model's time for it). Outcome: each
        text scans the rows of its LISTS_PROBED nearest lists (9 % of the rows at 800k: the
        nearest lists are the larger ones), and only its LISTED_RESCORE nearest of those are
        read and scored exactly. Unlike the int8 path this is not certain: a look-alike filed
        under a list the text does not probe, or ranked below LISTED_RESCORE by its bits, is
        missed. bench.lookalike_check (half retries of stored texts, half fresh ones) counts
        those misses against numpy: at 100k rows with the lists forced on, 0 of 359
        duplicates probing 16 lists of 64, 4 probing 8 (three of them within 0.01 of the
        band); at 1M, docs/benchmarks.md (Scale).
        """
        import numpy as np

        lists = await self._sign_lists(project, coarse)

        def nearest() -> dict[int, list[int]]:
            # Read once, under the lock: `add` may swap in larger arrays meanwhile, and every
            # row below `lists.size` (which only changes under the lock) is in both.
            words, layers, ids = coarse._words, coarse._layers, coarse._ids
            wanted: dict[int, list[int]] = {}
            probed = lists.probe(queries, LISTS_PROBED)
            for n, query in enumerate(queries):
                bits = np.frombuffer(_bits([query]), dtype=coarse.dtype)
                scanned = lists.scan(probed[n], words, layers, bits)
                for i in ids[coarse.nearest_scanned(scanned, layer, LISTED_RESCORE)]:
                    wanted.setdefault(int(i), []).append(n)
            return wanted

        async with self._listing:  # no regroup while the copy is read
            wanted = await asyncio.to_thread(nearest)
        async with self._session.read("checking for close vectors"):
            return await self._best_of(wanted, queries)

    async def _sign_lists(self, project: str, coarse: _CoarseBits) -> SignLists:
        """The project's lists, with every row of `coarse` filed (trained on first use).

        Centres outlive a reload of the bits (rows are filed again, ~2 s at 800k rows, in a
        thread) and are trained anew once the project has doubled since they were.
        """
        async with self._listing:
            lists, size = coarse.lists, coarse.size
            if lists is None or lists.size < size:
                packed = coarse.packed(0 if lists is None else lists.size, size)
                words, layers = coarse._words, coarse._layers
                centres = self._centres.get(project)
                if centres is not None and size > 2 * centres[1]:
                    centres = None

                def file() -> SignLists:
                    if lists is not None:
                        filed = lists
                    elif centres is not None:
                        filed = SignLists(*centres)
                    else:
                        filed = SignLists.train(packed, list_count(size))
                    filed.extend(packed)
                    if filed.needs_regroup():
                        filed.regroup(words, layers)
                    return filed

                lists = coarse.lists = await asyncio.to_thread(file)
                self._centres[project] = (lists.centres, lists.trained_on)
            return lists

    async def _coarse_bits(self, project: str, dims: int) -> _CoarseBits:
        """The project's in-memory bits, brought up to date with other connections' writes.

        Trigger: another connection (another server process on the same file) committed,
        which `PRAGMA data_version` reveals. Outcome: rows above the highest id loaded are
        added; at most every _COARSE_RELOAD_S the project is reloaded whole, which also picks
        up rows they backfilled or re-embedded below that id. Between reloads such rows can
        only be missed by the coarse pass, never mis-scored: rescoring reads the table.
        """
        version = int((await self._session.fetch("PRAGMA data_version"))[0][0])
        coarse = self._coarse.get(project)
        if coarse is not None and coarse.version == version:
            return coarse
        above = 0
        if coarse is None or time.monotonic() - coarse.loaded_at > _COARSE_RELOAD_S:
            size = await self._project_size(project)
            precise = dims if size <= PRECISE_MAX_ROWS else None
            coarse = self._coarse[project] = _CoarseBits(dims // 8, version, precise)
            # Room for the rows counted and an eighth more for the writes that follow.
            coarse.reserve(size + size // 8)
        else:
            above, coarse.version = coarse.top, version
        while True:
            # In chunks, so loading a million rows never holds them all as Python objects.
            rows = await self._session.fetch(
                # CROSS JOIN walks the embeddings in id order from `above`, so each chunk
                # stops at its LIMIT (via the project index, every chunk re-sorted it all).
                "SELECT e.id, s.layer, vec_quantize_binary(e.embedding),"
                f" {'e.embedding' if coarse.dims is not None else 'NULL'}"
                " FROM context_embeddings AS e CROSS JOIN context_snapshots AS s ON s.id = e.id"
                " WHERE e.id > ? AND s.project = ? ORDER BY e.id LIMIT ?",
                (above, project, _LOAD_CHUNK),
            )
            if not rows:
                return coarse
            coarse.add(
                [int(r[0]) for r in rows],
                [str(r[1]) for r in rows],
                b"".join(r[2] for r in rows),
                b"".join(r[3] for r in rows) if coarse.dims is not None else b"",
            )
            above = int(rows[-1][0])

    async def missing_vectors(self, *, limit: int) -> list[Memory]:
        """Rows without a vector, oldest first."""
        async with self._session.read("finding rows to embed"):
            return await self._session.fetch_memories(
                "SELECT s.* FROM context_snapshots AS s"
                " WHERE NOT EXISTS (SELECT 1 FROM context_embeddings AS e WHERE e.id = s.id)"
                " ORDER BY s.id LIMIT ?",
                (limit,),
            )

    async def vector_stats(self) -> tuple[int, int]:
        """(rows with a vector, rows without one)."""
        async with self._session.read("counting vectors"):
            rows = await self._session.fetch(
                "SELECT (SELECT count(*) FROM context_embeddings),"
                " (SELECT count(*) FROM context_snapshots)"
            )
        indexed, total = int(rows[0][0]), int(rows[0][1])
        return indexed, total - indexed
