"""KeywordPostings: FTS5's BM25 for a large project's keyword search, computed in memory.

Trigger: a keyword search in a project of `min_rows` to `max_rows` rows, in a long-running
server (`serve`; the hooks and one-shot commands never build this). Why: FTS5 computes BM25 for
every row an OR query matches (~1.2 us a match), so at 80k rows the keyword half of a hybrid
search took 7.6 ms, more than the query embedding and the vector search together, and above
10,000 matches it had to narrow the query (rows holding every word, or two of them) to stay
near that (issue 37). Outcome: the server keeps the project's postings in memory (for each
term the rows holding it and how often, weighted by column; for each row its length) and
computes, with numpy, the score FTS5's bm25() would give every row the same OR query matches:
the same phrases (each word whole, and as a prefix where `search_text` would ask for one), the
same IDF, column weights (1, 1, 0.5), k1, b and length normalisation, and the same order (best
score, then newest row). At 80k rows about 1 ms; no narrowing at any size it serves.

Terms are FTS5's own: rows and query words are tokenized by an FTS5 table of the same
tokenizer (keyword_tables.TOKENIZE) on a private in-memory connection, and after every sync the
row count and token total are checked against the project table's own statistics record.

Freshness, without reading the whole project per search: one statement reads the table's
statistics record, its `edits` count (migration 0016) and whether changes wait in the queue;
if all is as held, the postings answer. Rows added since (higher ids, as ids only grow) are
read and tokenized in a snapshot with those figures. A removed or rewritten row moves `edits`:
the postings are read again in the background, at most once per `_REBUILD_EVERY_S` (and no
sooner than `_REBUILD_SPACING` times the last build's duration), and until then FTS5 answers.
So does it whenever anything disagrees; this never answers from postings it cannot show to be
the table's.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import ctypes
import math
import sys
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import structlog

from memory_core.storage.sqlite.keyword_tables import TOKENIZE, table_id
from memory_core.storage.sqlite.session import SqliteSession

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["KeywordPostings", "Ranking"]

log = structlog.get_logger(__name__)

# FTS5's bm25() constants (fts5_aux.c) and the weights the keyword tables rank with
# (bm25(1.0, 1.0, 0.5)): content, key, metadata. Weights are kept doubled, as small integers.
K1 = 1.2
B = 0.75
_DOUBLED_WEIGHT = {"content": 2, "key": 2, "metadata": 1}
_WEIGHT_CASE = " ".join(f"WHEN '{c}' THEN {w}" for c, w in _DOUBLED_WEIGHT.items())
# Rows tokenized per step of a build: each step holds the GIL while its rows become Python
# objects (~20 ms for 1,000 rows), so a build never stalls the event loop for long.
_CHUNK = 1_000
# Rows added since the last sync that a search reads and tokenizes itself; more (an import)
# are left to a background build.
_CATCH_UP_MAX = 2_000
# Postings appended since the last build are kept apart, and merged in past this many.
_TAIL_MAX = 50_000
_TAIL_CHUNKS = 16
_REBUILD_EVERY_S = 30.0
# A build is due after every removal or rewrite, and a large project's takes long (68 s at
# 800k rows on 2 cores, with MEMSTRATA_KEYWORD_POSTINGS_MAX raised): the next one waits at
# least this many times as long as the last took, so rebuilding holds at most a tenth of a
# core whatever the project's size (FTS5 answers meanwhile, as it would without postings).
_REBUILD_SPACING = 10.0


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian, 7 bits a byte, the ninth byte whole), in order."""
    values, i = [], 0
    while i < len(blob):
        value = 0
        for _ in range(8):
            byte = blob[i]
            i += 1
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        else:
            value = (value << 8) | blob[i]
            i += 1
        values.append(value)
    return values


def _statistics(blob: bytes | None) -> tuple[int, int]:
    """(rows, tokens in all columns) from an FTS5 table's averages record (its `_data` row 1)."""
    if not blob:
        return 0, 0
    values = _varints(blob)
    return values[0], sum(values[1:])


_EMPTY = "INSERT INTO t (t) VALUES ('delete-all')"


class _Tokenizer:
    """FTS5's tokenizer, as the keyword tables configure it, on a private in-memory database."""

    def __init__(self) -> None:
        import sqlean

        self._db = sqlean.connect(":memory:", check_same_thread=False)
        # Contentless, so 'delete-all' empties it at once: deleted rows would otherwise stay in
        # its segments until merged, and every read of the vocabulary would walk them.
        self._db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(content, key, metadata, content = '',"
            f" tokenize = '{TOKENIZE}')"
        )
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()

    def postings(self, rows: Sequence[Any]) -> list[tuple[str, int, int, int]]:
        """(term, row id, instances, doubled weighted instances) for each term of each row."""
        with self._lock:
            self._db.executemany(
                "INSERT INTO t (rowid, content, key, metadata) VALUES (?, ?, ?, ?)", rows
            )
            try:
                found: list[tuple[str, int, int, int]] = self._db.execute(
                    f"SELECT term, doc, count(*), sum(CASE col {_WEIGHT_CASE} END) FROM v"
                    " GROUP BY term, doc"
                ).fetchall()
                return found
            finally:
                self._db.execute(_EMPTY)

    def terms(self, word: str) -> list[str]:
        """The terms FTS5 makes of `word` in a query (its stem; several for a phrase)."""
        with self._lock:
            self._db.execute(
                "INSERT INTO t (rowid, content, key, metadata) VALUES (1, ?, '', '')", (word,)
            )
            try:
                rows = self._db.execute("SELECT term FROM v ORDER BY offset").fetchall()
            finally:
                self._db.execute(_EMPTY)
        return [str(r[0]) for r in rows]


_TOKENIZERS: dict[str, _Tokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer(use: str) -> _Tokenizer:
    """The process's tokenizer for `use`: "rows" (builds, in worker threads) or "queries".

    Two, so a search's query words (tokenized on the event loop) never wait for a chunk of
    rows being tokenized for a build.
    """
    with _TOKENIZERS_LOCK:
        if use not in _TOKENIZERS:
            _TOKENIZERS[use] = _Tokenizer()
        return _TOKENIZERS[use]


@lru_cache(maxsize=512)
def _query_terms(word: str) -> tuple[str, ...]:
    return tuple(_tokenizer("queries").terms(word))


class Ranking:
    """Every row an OR query matched, with its FTS5 rank (minus its BM25 score)."""

    def __init__(self, ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> None:
        self._ids = ids
        self._scores = scores

    def __len__(self) -> int:
        return int(self._ids.size)

    def first(self, count: int) -> list[tuple[int, float]]:
        """The `count` best (row id, rank): best score first, the newest row of a tie first."""
        import numpy as np

        ids, scores = self._ids, self._scores
        if count < scores.size:
            # Every row scoring at least the count-th best, ties at the edge included, then
            # ordered exactly.
            edge = np.partition(scores, scores.size - count)[scores.size - count]
            keep = np.flatnonzero(scores >= edge)
            ids, scores = ids[keep], scores[keep]
        order = np.lexsort((-ids, -scores))[:count]
        return [(int(i), -float(s)) for i, s in zip(ids[order], scores[order], strict=True)]


class _Postings:
    """One project's keyword postings: the table's rows, their lengths, each term's rows."""

    def __init__(self, table: str, edits: int) -> None:
        import numpy as np

        self.table = table
        self.edits = edits
        self.rows = 0
        self.tokens = 0
        self.top = 0  # the highest row id read
        # True while a build reads them: no search looks, so chunks wait for the one merge.
        self.building = False
        self._ids = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.int32)
        self._terms: dict[str, int] = {}
        self._sorted: list[str] | None = None  # the terms in order, for prefixes
        # Postings of terms 0..n-1 as one array each (CSR: term t's are offsets[t]:offsets[t+1])
        self._offsets = np.zeros(1, dtype=np.int64)
        self._rows_of = np.zeros(0, dtype=np.int32)
        self._weights = np.zeros(0, dtype=np.uint16)
        # Postings added since, one (terms, rows, weights) triple of arrays per chunk read.
        self._tail: list[tuple[Any, Any, Any]] = []
        self._tail_size = 0
        self._norm: tuple[tuple[int, int], npt.NDArray[np.float64]] | None = None

    def add(self, ids: Sequence[int], postings: Sequence[tuple[str, int, int, int]]) -> None:
        """Append rows (ids ascending, above `top`) and their postings (from _Tokenizer)."""
        import numpy as np

        if not ids:
            return
        start = self.rows
        position = {row_id: start + n for n, row_id in enumerate(ids)}
        end = start + len(ids)
        if end > self._ids.size:
            capacity = max(end, self._ids.size + self._ids.size // 2, 1024)
            self._ids = np.resize(self._ids, capacity)
            self._lengths = np.resize(self._lengths, capacity)
        self._ids[start:end] = ids
        numbers = []
        for term, _, _, _ in postings:
            number = self._terms.get(term)
            if number is None:
                number = self._terms[term] = len(self._terms)
                self._sorted = None
            numbers.append(number)
        # Each chunk becomes numpy arrays at once, merged once at the end of a build: Python
        # arrays grown to a whole project's postings left 60 MB more in the heap at 80k rows.
        rows = np.array([position[p[1]] for p in postings], dtype=np.int32)
        counts = np.array([p[2] for p in postings], dtype=np.int64)
        self._tail.append(
            (
                np.array(numbers, dtype=np.int32),
                rows,
                np.array([p[3] for p in postings], dtype=np.uint16),
            )
        )
        self._tail_size += len(postings)
        if len(self._tail) > _TAIL_CHUNKS and not self.building:
            # Searches that each catch up a row or two would leave a chunk apiece, and every
            # phrase of a search looks in every chunk: they are joined into one. Not while a
            # build reads a project: joining its growing tail every 16 chunks copied it 50
            # times at 800k rows (6 s of a 68 s build, and 40 MB of its peak).
            joined_terms, joined_rows, joined_weights = (
                np.concatenate(part) for part in zip(*self._tail, strict=True)
            )
            self._tail = [(joined_terms, joined_rows, joined_weights)]
        lengths = np.bincount(rows - start, weights=counts, minlength=len(ids)).astype(np.int64)
        self._lengths[start:end] = lengths
        self.rows = end
        self.tokens += int(lengths.sum())
        self.top = max(self.top, int(ids[-1]))

    @property
    def unmerged(self) -> int:
        """Postings added since the last merge."""
        return self._tail_size

    def merge(self) -> None:
        """Fold the postings added since the last merge into the per-term arrays."""
        import numpy as np

        if not self._tail:
            return
        old = np.repeat(np.arange(self._offsets.size - 1, dtype=np.int32), np.diff(self._offsets))
        terms = np.concatenate([old, *(t for t, _, _ in self._tail)])
        order = np.argsort(terms, kind="stable")
        self._rows_of = np.concatenate([self._rows_of, *(r for _, r, _ in self._tail)])[order]
        weights = np.concatenate([self._weights, *(w for _, _, w in self._tail)])[order]
        # A doubled weight over 255 means one term 128 times in a row: rare, so one byte
        # a posting unless a row of the project has one.
        small = weights.size == 0 or int(weights.max()) <= np.iinfo(np.uint8).max
        self._weights = weights.astype(np.uint8) if small else weights
        counts = np.bincount(terms, minlength=len(self._terms))
        self._offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._tail, self._tail_size = [], 0

    def _prefixed(self, prefix: str) -> list[int]:
        if self._sorted is None:
            self._sorted = sorted(self._terms)
        found = []
        at = bisect.bisect_left(self._sorted, prefix)
        while at < len(self._sorted) and self._sorted[at].startswith(prefix):
            found.append(self._terms[self._sorted[at]])
            at += 1
        return found

    def _phrase(self, terms: list[int]) -> tuple[Any, Any]:
        """(rows, weighted instances) of rows holding any of `terms`, each row once."""
        import numpy as np

        rows, weights = [], []
        known = self._offsets.size - 1
        for term in terms:
            if term < known:
                lo, hi = self._offsets[term], self._offsets[term + 1]
                rows.append(self._rows_of[lo:hi])
                weights.append(self._weights[lo:hi])
        for tail_terms, tail_rows, tail_weights in self._tail:
            hits = np.flatnonzero(np.isin(tail_terms, terms))
            if hits.size:
                rows.append(tail_rows[hits])
                weights.append(tail_weights[hits])
        if not rows:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        if len(rows) == 1:
            return rows[0], weights[0] / 2.0
        # Several terms (a prefix, or a term with postings on both sides of a merge) may
        # each hold the same row: its instances add up, as in FTS5's phrase count.
        unique, inverse = np.unique(np.concatenate(rows), return_inverse=True)
        summed = np.bincount(inverse, weights=np.concatenate(weights).astype(np.float64))
        return unique, summed / 2.0

    def rank(self, phrases: Sequence[tuple[str, bool]]) -> Ranking:
        """BM25 of every row matching any phrase: (term, True for a prefix), FTS5's order.

        The arithmetic is fts5_aux.c's fts5Bm25Function, step for step, so scores agree with
        FTS5's to the last bit on this machine and ties break alike.
        """
        import numpy as np

        n = self.rows
        avgdl = self.tokens / n
        if self._norm is None or self._norm[0] != (n, self.tokens):
            lengths = self._lengths[:n].astype(np.float64)
            self._norm = ((n, self.tokens), K1 * (1 - B + B * lengths / avgdl))
        norm = self._norm[1]
        scores = np.zeros(n, dtype=np.float64)
        for term, prefix in phrases:
            if prefix:
                numbers = self._prefixed(term)
            else:
                number = self._terms.get(term)
                numbers = [] if number is None else [number]
            rows, freq = self._phrase(numbers)
            if not rows.size:
                continue
            hits = rows.size
            idf = math.log((n - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            scores[rows] += idf * ((freq * (K1 + 1.0)) / (freq + norm[rows]))
        matched = np.flatnonzero(scores)
        return Ranking(self._ids[matched], scores[matched])

    def hits(self, term: str) -> int:
        """Rows holding `term` (whole)."""
        number = self._terms.get(term)
        if number is None:
            return 0
        rows, _ = self._phrase([number])
        return int(rows.size)


async def _rows_above(session: SqliteSession, project: str, top: int) -> list[Any]:
    """The next chunk of the project's rows above id `top`, as its keyword table indexed them."""
    # `+project`: walk the ids up from `top` (the project's index would sort all its rows).
    return await session.fetch(
        "SELECT id, content, key, metadata FROM context_snapshots_search"
        " WHERE id > ? AND +project = ? ORDER BY id LIMIT ?",
        (top, project, _CHUNK),
    )


# A keyword table's statistics record (rows, tokens per column), its `edits` count, and
# whether changes wait in the queue (keyword_tables: rows written by another tool).
_STATE = (
    "SELECT (SELECT block FROM {table}_data WHERE id = 1),"
    " (SELECT edits FROM context_snapshots_fts_projects WHERE id = ?),"
    " EXISTS (SELECT 1 FROM context_snapshots_fts_queue)"
)


async def _state(session: SqliteSession, table: str) -> tuple[int, int, int, bool]:
    """(rows, tokens, edits, anything queued) of a project's keyword table (see _STATE)."""
    found = await session.fetch(_STATE.format(table=table), (table_id(table),))
    rows, tokens = _statistics(found[0][0])
    return rows, tokens, int(found[0][1] or 0), bool(found[0][2])


def _rank(
    postings: _Postings, words: Sequence[str], prefix_min_chars: int, common: int
) -> Ranking | None:
    """The OR of `words` ranked on `postings` (see KeywordPostings.ranking)."""
    phrases: list[tuple[str, bool]] = []
    for word in words:
        terms = _query_terms(word)
        if len(terms) != 1:
            return None
        phrases.append((terms[0], False))
        if prefix_min_chars and len(word) >= prefix_min_chars and postings.hits(terms[0]) < common:
            phrases.append((terms[0], True))
    return postings.rank(phrases)


def _return_freed_heap() -> None:
    """Hand the heap a build freed back to the system (glibc's malloc_trim; elsewhere nothing).

    Trigger: a build, which reads a project's rows as Python tuples and numpy chunks. Why:
    glibc keeps what they freed inside the heap: a server at 80k rows held 34 MB more after
    the build than its postings need (8.4 MB). Outcome: ~14 MB above the server's size
    before the build.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _out_of_step(postings: _Postings, rows: int, tokens: int) -> bool:
    """Whether the postings disagree with the table's statistics (logged: it should not happen)."""
    if (rows, tokens) == (postings.rows, postings.tokens):
        return False
    log.warning(
        "keyword_postings.out_of_step",
        table=postings.table,
        rows=rows,
        tokens=tokens,
        held_rows=postings.rows,
        held_tokens=postings.tokens,
    )
    return True


async def _add(postings: _Postings, rows: Sequence[Any]) -> None:
    found = [tuple(r) for r in rows]
    terms = await asyncio.to_thread(_tokenizer("rows").postings, found)
    postings.add([int(r[0]) for r in found], terms)


class KeywordPostings:
    """The in-memory postings of a process's large projects, shared by its connections."""

    def __init__(
        self,
        *,
        min_rows: int,
        max_rows: int,
        rebuild_every_s: float = _REBUILD_EVERY_S,
        rebuild_spacing: float = _REBUILD_SPACING,
    ) -> None:
        self.min_rows = max(1, min_rows)
        self.max_rows = max_rows
        self.rebuild_every_s = rebuild_every_s
        self.rebuild_spacing = rebuild_spacing
        self._projects: dict[str, _Postings] = {}
        self._tables: dict[str, str] = {}  # project -> its keyword table, once searched here
        self._locks: dict[str, asyncio.Lock] = {}
        self._builds: dict[str, asyncio.Task[None]] = {}
        self._built_at: dict[str, float] = {}
        self._took: dict[str, float] = {}  # seconds the last build of a table took

    async def ranking(
        self,
        session: SqliteSession,
        project: str,
        table: str,
        words: Sequence[str],
        prefix_min_chars: int,
        common: int,
    ) -> Ranking | None:
        """Every row of `table` the OR of `words` matches, by FTS5's BM25; None: ask FTS5.

        Phrases as `search_text` builds them: each word whole, and as a prefix too when it
        has `prefix_min_chars` letters or more and fewer than `common` rows hold it whole.
        None when the project is outside the sizes kept, its postings are being read, or a
        word is more than one term (a phrase query).
        """
        async with self._locks.setdefault(table, asyncio.Lock()):
            postings = await self._synced(session, project, table)
        if postings is None:
            return None
        self._tables[project] = table
        return _rank(postings, words, prefix_min_chars, common)

    async def unchanged_ranking(
        self,
        session: SqliteSession,
        project: str,
        words: Sequence[str],
        prefix_min_chars: int,
        common: int,
    ) -> Ranking | None:
        """`ranking`, if the project's postings are held and its table is as they left it.

        Trigger: every search of a project whose postings are held. Why: finding the table
        (`keyword_table`) and a snapshot to compare it were four round trips to the driver's
        thread, on the path that runs beside the query embedding. Outcome: one statement
        reads the table's statistics, its `edits` and whether anything is queued for the
        tables; if all is as held, the postings answer. Otherwise None, and `search_text`
        goes the long way (which applies the queue and catches up).
        """
        table = self._tables.get(project)
        postings = self._projects.get(table) if table is not None else None
        if table is None or postings is None:
            return None
        async with session.read("keyword postings"):
            rows, tokens, edits, queued = await _state(session, table)
        if queued or (rows, tokens, edits) != (postings.rows, postings.tokens, postings.edits):
            return None
        return _rank(postings, words, prefix_min_chars, common)

    async def _synced(self, session: SqliteSession, project: str, table: str) -> _Postings | None:
        """The project's postings brought up to date, or None (and a build started if due)."""
        async with session.snapshot("keyword postings"):
            rows, tokens, edits, _ = await _state(session, table)
            if not self.min_rows <= rows <= self.max_rows:
                self._projects.pop(table, None)
                return None
            postings = self._projects.get(table)
            # Held, not edited since, and behind by rows few enough to read here (more, as
            # after an import, are read by a build).
            if (
                postings is not None
                and postings.edits == edits
                and rows - postings.rows <= _CATCH_UP_MAX
            ):
                if (rows, tokens) != (postings.rows, postings.tokens):
                    await self._catch_up(session, project, postings)
                if not _out_of_step(postings, rows, tokens):
                    return postings
            self._projects.pop(table, None)
            self._start_build(session, project, table)
            return None

    async def _catch_up(self, session: SqliteSession, project: str, postings: _Postings) -> None:
        """Read and tokenize the project's rows above `postings.top` (inside a snapshot)."""
        while rows := await _rows_above(session, project, postings.top):
            await _add(postings, rows)
            if len(rows) < _CHUNK:
                break
        if postings.unmerged > _TAIL_MAX:
            postings.merge()

    def _start_build(self, session: SqliteSession, project: str, table: str) -> None:
        running = self._builds.get(table)
        if running is not None and not running.done():
            return
        last = self._built_at.get(table)
        wait = max(self.rebuild_every_s, self.rebuild_spacing * self._took.get(table, 0.0))
        if last is not None and time.monotonic() - last < wait:
            return
        self._built_at[table] = time.monotonic()
        self._builds[table] = asyncio.create_task(self._build(session, project, table))

    async def _build(self, session: SqliteSession, project: str, table: str) -> None:
        """Read the project's postings from its rows; installed only if nothing was edited."""
        started = time.monotonic()
        try:
            async with session.read("keyword postings"):
                _, _, edits, _ = await _state(session, table)
            postings = _Postings(table, edits)
            postings.building = True
            while True:
                # Each chunk is read under the connection's lock and tokenized outside it, so
                # searches on the connection go on between chunks.
                async with session.read("keyword postings"):
                    chunk = await _rows_above(session, project, postings.top)
                if not chunk:
                    break
                await _add(postings, chunk)
            postings.merge()
            postings.building = False
            async with self._locks.setdefault(table, asyncio.Lock()):
                async with session.snapshot("keyword postings"):
                    rows, tokens, now_edits, _ = await _state(session, table)
                    if now_edits != edits:
                        return  # edited while read: the next search starts another build
                    await self._catch_up(session, project, postings)
                if _out_of_step(postings, rows, tokens):
                    return
                self._projects[table] = postings
            _return_freed_heap()
            log.info(
                "keyword_postings.built",
                table=table,
                rows=postings.rows,
                ms=round((time.monotonic() - started) * 1000),
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("keyword_postings.build_failed", table=table)
        finally:
            # Installed, discarded as edited meanwhile, or failed: the time was spent alike.
            self._took[table] = time.monotonic() - started

    def held(self) -> dict[str, int]:
        """The keyword tables whose postings are held, with their row counts."""
        return {table: postings.rows for table, postings in self._projects.items()}

    async def settled(self) -> None:
        """Wait for the builds under way (benchmarks, tests)."""
        while running := [t for t in self._builds.values() if not t.done()]:
            await asyncio.wait(running)

    async def aclose(self) -> None:
        """Stop the builds under way (before their connections close)."""
        for task in self._builds.values():
            task.cancel()
        for task in self._builds.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._builds.clear()
