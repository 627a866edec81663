"""How cost grows with the store: 10k, 100k and 1M memories (a benchmark, not a test).

    python -m bench.scale                               # sizes 10000 100000 1000000
    python -m bench.scale --sizes 10000 100000 --json bench/results/scale.json
    python -m bench.scale --sizes 10000 --skip-server   # store figures only

Stores are built through the real append path, `MemoryService.append_many` in batches of
1,000 (one transaction and one model call per batch; duplicate merging off, so a store of N
holds N rows), from synthetic short texts:
- words are drawn from a vocabulary of ~4,000 (English words in frequency order, 40 % of the
  rarer ones pronounceable pseudo-words, 1.3 model tokens a word as in real conversation) with
  a Zipf-Mandelbrot distribution, so BM25 sees common and rare terms as in real text; lengths
  are log-normal (median 14 words, 3 to 80);
- three projects (80 / 15 / 5 % of the rows); searches run in the largest one;
- 90 % episodic, 8 % semantic facts (keyed), 2 % procedural rules (keyed);
- ages spread over 180 days so every tier is populated (1 % ACTIVE, 4 % RECENT, 35 % ARCHIVED,
  60 % EXPIRED). Ages are set through the clock: rows are appended oldest first, and before
  each batch the service's clock is set to that batch's time (a batch never straddles a tier
  boundary), so `created_at` is what `append` itself stamps. Tiers are then derived by
  `recalculate_tiers`, as the daily job would.

Vectors: embedding 1M texts with MiniLM on 2 cores takes about an hour, so a pool of distinct
base texts (20,000, or the store size if smaller) is embedded once with the real model. Every
stored text is a base text plus 3 extra words, and its vector is the base's vector plus
Gaussian noise (sigma 0.015 per dimension, about cosine 0.95 to the base), re-normalised. The
embedder that does this sits behind the real `LazyEmbedder`/`Indexer`, so the vector tables
are written exactly as in production; texts it has not been given (queries, and the appends
timed for throughput) go to the real model.

Measured per size (median and p95): append throughput (single and batched, with and without
embeddings, the real model for "with"), search per mode with the query embedding timed alone,
a numpy brute-force cosine over the same vectors (the exact-search reference, each search
figure also as a ratio to it), load_context, recall, get_memory_stats, recalculation (first
after the build: every row changes; then a day later), pruning up to 100k expired rows through
the tool's batched path, and database bytes per 1k memories. Once, against the largest store
built: cold start to `tools/list` over stdio (model preload on and off), `recall` round trip
over stdio and HTTP, and peak RSS of the server process after a hybrid search has loaded the
model. Writes the raw figures as JSON and prints markdown tables.

Reading it: compare each search with the numpy row of the same size (the memory-bandwidth
floor; a ratio under 3x at 100k is the target), and recall against exact search (1.0 at 10k,
lower with the coarse pass at 100k and 1M).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog
from mcp import Client, StdioServerParameters

from bench.latency import summary
from memory_core.domain.duplicates import DuplicateThresholds
from memory_core.domain.models import Layer, SearchMode
from memory_core.embeddings import LazyEmbedder
from memory_core.embeddings.minilm_onnx import DIMS, MODEL_ID, TOKENIZER_PATH, MiniLMOnnxEmbedder
from memory_core.ports import Embedder
from memory_core.services import maintenance
from memory_core.services.memories import AppendItem, MemoryService, SearchRequest
from server.container import Container, open_container
from server.settings import ScheduleSettings, Settings

Vector = npt.NDArray[np.float32]

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 1000
POOL_MAX = 20_000
SIGMA = 0.015
PROJECTS = (("main", 0.80), ("side", 0.15), ("misc", 0.05))
# Thresholds no pair of texts reaches: nothing is merged as a duplicate or named a candidate.
NO_MERGING = DuplicateThresholds(duplicate_similarity=2.0, candidate_similarity=2.0)


def _words(text: str) -> list[str]:
    return text.split()


# (tier, share of rows, youngest age, oldest age)
TIER_MIX = (
    ("ACTIVE", 0.01, timedelta(minutes=1), timedelta(minutes=55)),
    ("RECENT", 0.04, timedelta(hours=1, minutes=5), timedelta(hours=23)),
    ("ARCHIVED", 0.35, timedelta(days=1, hours=1), timedelta(days=29)),
    ("EXPIRED", 0.60, timedelta(days=31), timedelta(days=180)),
)
FUNCTION_WORDS = _words(
    "the of and to a in is that for it was on with as be at by this had not are but from or "
    "have an they which one you were all we her she there would their will when who him been "
    "has more if no out so said what up its about into than them can only other new some could"
)
_ONSETS = _words("b c d f g h j k l m n p r s t v w z br ch cl dr fl gr pl pr sh st th tr")
_VOWELS = _words("a e i o u ai ea io ou")
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x"]


def _english_words() -> list[str]:
    """Whole English words of the MiniLM vocabulary, commonest first (ids from 1996 on)."""
    vocab: dict[str, int] = json.loads(TOKENIZER_PATH.read_text(encoding="utf-8"))["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return [t for t, i in ordered if i >= 1996 and t.isascii() and t.isalpha() and len(t) >= 2]


# -- synthetic text ---------------------------------------------------------------------


class Corpus:
    """Zipf-distributed words over a fixed vocabulary; deterministic for a seed.

    The vocabulary is English function words, then English words in frequency order (the
    whole-word entries of the vendored MiniLM tokenizer, whose ids follow corpus frequency),
    with 40 % of the slots past the 200 commonest filled by pronounceable pseudo-words (names,
    jargon) that the tokenizer splits into pieces. Why: the model's cost grows with tokens,
    not words; pseudo-words alone made 2.0 tokens a word, English words alone 1.06, and this
    mix 1.31, the rate of LoCoMo's real conversation turns (1.30 tokens a word).
    """

    def __init__(
        self, seed: int, size: int = 4000, exponent: float = 1.07, pseudo_share: float = 0.4
    ) -> None:
        rng = np.random.default_rng(seed)
        english = iter(_english_words())
        words = list(FUNCTION_WORDS)
        seen = set(words)
        while len(words) < size:
            if len(words) > 200 and rng.random() < pseudo_share:
                syllables = int(rng.integers(1, 4))
                word = "".join(
                    str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) for _ in range(syllables)
                ) + str(rng.choice(_CODAS))
            else:
                word = next(english)
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = np.array(words)
        weights = 1.0 / (np.arange(len(words)) + 2.7) ** exponent
        self.cumulative = np.cumsum(weights) / weights.sum()

    def draw(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.str_]:
        """n words, Zipf-distributed."""
        picks = np.searchsorted(self.cumulative, rng.random(n))
        return self.words[np.minimum(picks, len(self.words) - 1)]

    def sentences(self, rng: np.random.Generator, n: int) -> list[str]:
        """n texts of log-normal length (median 14 words, 3-80)."""
        lengths = np.clip(rng.lognormal(np.log(14), 0.6, n).astype(int), 3, 80)
        flat = self.draw(rng, int(lengths.sum()))
        out, at = [], 0
        for length in lengths:
            out.append(" ".join(flat[at : at + length]).capitalize() + ".")
            at += length
        return out

    def content_words(self, rng: np.random.Generator, n: int) -> list[str]:
        """n words that are not function words (query material)."""
        words = [w for w in self.draw(rng, n * 4) if w not in FUNCTION_WORDS]
        return words[:n]


@dataclasses.dataclass
class Pool:
    """Distinct base texts and their real embeddings."""

    texts: list[str]
    vectors: Vector


def build_pool(corpus: Corpus, size: int, cache: Path, real: Embedder) -> tuple[Pool, float]:
    """Embed `size` base texts with the real model (cached on disk); returns seconds spent."""
    texts = corpus.sentences(np.random.default_rng(1), size)
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = cache / f"pool-{size}-{digest}.npy"
    if path.exists():
        return Pool(texts, np.load(path)), 0.0
    started = time.perf_counter()
    vectors = real.embed(texts)
    spent = time.perf_counter() - started
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return Pool(texts, vectors), spent


class PoolEmbedder:
    """Hands out the perturbed pool vector of a registered text; the real model otherwise."""

    model_id = MODEL_ID
    dims = DIMS

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.registered: dict[str, Vector] = {}

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        unknown = []
        for i, text in enumerate(texts):
            vector = self.registered.pop(text, None)
            if vector is None:
                unknown.append(i)
            else:
                out[i] = vector
        if unknown:
            out[unknown] = self.real.embed([texts[i] for i in unknown])
        return out


@dataclasses.dataclass
class Batch:
    """Rows appended together, at one instant."""

    at: datetime
    project: str
    items: list[AppendItem]
    vectors: Vector


def plan_batches(size: int, corpus: Corpus, pool: Pool, seed: int) -> list[Batch]:
    """The store's rows, oldest first, in batches that never straddle a tier or project."""
    rng = np.random.default_rng(seed)
    batches: list[Batch] = []
    key_serial = 0
    for project, share in PROJECTS:
        rows = round(size * share)
        for _, tier_share, young, old in TIER_MIX:
            count = round(rows * tier_share)
            ages = np.sort(rng.uniform(young.total_seconds(), old.total_seconds(), count))[::-1]
            for start in range(0, count, BATCH):
                chunk = ages[start : start + BATCH]
                n = len(chunk)
                bases = rng.integers(0, len(pool.texts), n)
                extra = corpus.draw(rng, n * 2)
                rare = corpus.words[rng.integers(0, len(corpus.words), n)]
                layers = rng.random(n)
                noise = rng.standard_normal((n, DIMS)).astype(np.float32) * SIGMA
                vectors = pool.vectors[bases] + noise
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                items = []
                for j in range(n):
                    text = f"{pool.texts[bases[j]]} {extra[2 * j]} {extra[2 * j + 1]} {rare[j]}."
                    if layers[j] < 0.90:
                        items.append(AppendItem(layer=Layer.EPISODIC, content=text))
                    else:
                        key_serial += 1
                        layer = Layer.SEMANTIC if layers[j] < 0.98 else Layer.PROCEDURAL
                        key = f"{extra[2 * j]} {rare[j]} {key_serial}"
                        items.append(AppendItem(layer=layer, content=text, key=key))
                at = NOW - timedelta(seconds=float(np.median(chunk)))
                batches.append(Batch(at, project, items, vectors.astype(np.float32)))
    batches.sort(key=lambda b: b.at)
    return batches


def embedded_text(item: AppendItem) -> str:
    """What the indexer embeds for an item (indexing.embedding_text, before storage)."""
    return f"{item.key}: {item.content}" if item.key else item.content


# -- timing helpers ---------------------------------------------------------------------


async def timed(calls: Sequence[Callable[[], Awaitable[Any]]], warmup: int = 3) -> dict[str, float]:
    """Run each call once (after a few warm-up calls) and summarise the milliseconds."""
    return summary(await timed_samples(calls, warmup))


class BenchClock:
    """A clock the benchmark sets by hand."""

    def __init__(self) -> None:
        self.at = NOW

    def now(self) -> datetime:
        return self.at


def remove_db(path: Path) -> None:
    """Delete a database file and its WAL/SHM companions."""
    for p in path.parent.glob(path.name + "*"):
        p.unlink()


def db_bytes(path: Path) -> int:
    """The database file and its WAL/SHM companions."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


# -- one store --------------------------------------------------------------------------


def settings_for(db: Path) -> Settings:
    return Settings(db=db, schedule=ScheduleSettings(enabled=False), embedding_preload=False)


async def build_store(
    db: Path, size: int, corpus: Corpus, pool: Pool, real: Embedder, log: Callable[[str], None]
) -> dict[str, Any]:
    """Append every planned batch through MemoryService.append_many; returns build figures."""
    batches = plan_batches(size, corpus, pool, seed=size)
    pooled = PoolEmbedder(real)
    clock = BenchClock()
    lazy = LazyEmbedder(lambda: pooled, model_id=MODEL_ID, dims=DIMS)
    rows = 0
    started = time.perf_counter()
    async with open_container(settings_for(db), clock, embedder=lazy) as store:
        await lazy.wait()
        # Rows sharing a base text are near duplicates by the write path's rules (cosine ~0.9,
        # most words shared): with them merged a "100k" store held 51k rows. The store is
        # meant to hold `size` memories, so the build appends without the duplicate check.
        memories = dataclasses.replace(store.memories, duplicates=NO_MERGING)
        for n, batch in enumerate(batches):
            clock.at = batch.at
            for item, vector in zip(batch.items, batch.vectors, strict=True):
                pooled.registered[embedded_text(item)] = vector
            results = await memories.append_many(batch.project, batch.items)
            rows += sum(r.status == "created" for r in results)
            pooled.registered.clear()
            if n % 100 == 0:
                log(f"  built {rows} rows ({time.perf_counter() - started:.0f} s)")
        assert store.indexer is not None
        await store.indexer.aclose()
    spent = time.perf_counter() - started
    return {"rows": rows, "build_s": round(spent, 1), "build_rows_per_s": round(rows / spent)}


# How models open the questions they search with (fresh queries start so half the time).
_OPENERS = (
    "what did we decide about",
    "how do we handle",
    "why does the",
    "where did we leave the",
    "when did we last change",
    "what was the problem with",
    "notes on",
    "remind me how",
)


@dataclasses.dataclass(frozen=True)
class Query:
    """A search text and its kind: "stored" (a stored text, two words dropped), "short" (a
    fresh 5-15-word sentence) or "long" (a fresh 20-30-word one)."""

    text: str
    kind: str


def query_mix(
    corpus: Corpus, pool: Pool, n: int, stored: Sequence[str] | None = None
) -> list[Query]:
    """The realistic query mix: half stored texts with two words dropped, half fresh sentences.

    Models search with whole sentences, not keywords (issue 37: the long queries cost twice
    the short ones elsewhere). Even positions take a stored text (`stored`: texts read from
    the store; else a base text of the pool, which every stored text begins with) and drop
    two of its words at random; odd ones are fresh Zipf sentences, 70 % of 5-15 words and 30 %
    of 20-30, half of them opened as a question is. Deterministic for a given input.
    """
    rng = np.random.default_rng(99)
    source = list(stored) if stored else pool.texts
    queries = []
    for i in range(n):
        if i % 2 == 0:
            words = source[int(rng.integers(len(source)))].rstrip(".").split()
            if len(words) > 3:
                drop = set(rng.choice(len(words), size=2, replace=False).tolist())
                words = [w for j, w in enumerate(words) if j not in drop]
            queries.append(Query(" ".join(words), "stored"))
            continue
        long = rng.random() < 0.3
        length = int(rng.integers(20, 31) if long else rng.integers(5, 16))
        opener = _OPENERS[int(rng.integers(len(_OPENERS)))].split() if rng.random() < 0.5 else []
        words = opener + [str(w) for w in corpus.draw(rng, max(length - len(opener), 2))]
        text = " ".join(words).capitalize() + ("?" if opener else ".")
        queries.append(Query(text, "long" if long else "short"))
    return queries


def query_texts(
    corpus: Corpus, pool: Pool, n: int, stored: Sequence[str] | None = None
) -> list[str]:
    """The texts of `query_mix` (bench.search_ab times the same queries)."""
    return [q.text for q in query_mix(corpus, pool, n, stored)]


async def stored_texts(store: Container, n: int, seed: int = 11) -> list[str]:
    """`n` texts of the main project's rows, drawn at random (the stored half of the mix)."""
    session = store.repo._session  # type: ignore[attr-defined]  # benchmark: sample rows
    async with session.read("bench: texts"):
        rows = await session.fetch(
            "SELECT id FROM context_snapshots WHERE project = 'main' ORDER BY id"
        )
        ids = [int(r[0]) for r in rows]
        picked = np.random.default_rng(seed).choice(len(ids), size=min(n, len(ids)), replace=False)
        marks = ", ".join(str(ids[int(i)]) for i in sorted(picked))
        rows = await session.fetch(
            f"SELECT content FROM context_snapshots WHERE id IN ({marks}) ORDER BY id"
        )
    return [str(r[0]) for r in rows]


async def main_vectors(store: Container) -> tuple[npt.NDArray[np.int64], Vector]:
    """The main project's ids and stored vectors (the exact-search reference's matrix)."""
    session = store.repo._session  # type: ignore[attr-defined]  # benchmark: read raw vectors
    async with session.read("bench: vectors"):
        rows = await session.fetch(
            "SELECT e.id, e.embedding FROM context_embeddings AS e"
            " JOIN context_snapshots AS s USING (id) WHERE s.project = 'main'"
        )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, DIMS)
    return ids, matrix


def numpy_exact(
    ids: npt.NDArray[np.int64], matrix: Vector, queries: Vector, limit: int
) -> tuple[list[float], list[set[int]]]:
    """Exact cosine top-`limit` by numpy for each query: ms per query, and the ids found."""
    samples, exact = [], []
    for q in queries:
        tick = time.perf_counter()
        top = _exact_top(matrix, q, limit)
        samples.append((time.perf_counter() - tick) * 1000)
        exact.append({int(i) for i in ids[top]})
    return samples, exact


def _exact_top(matrix: Vector, query: Vector, limit: int) -> npt.NDArray[np.intp]:
    scores = matrix @ query
    top = np.argpartition(-scores, limit)[:limit]
    ordered: npt.NDArray[np.intp] = top[np.argsort(-scores[top])]
    return ordered


def embedding_then_exact(
    real: Embedder, matrix: Vector, texts: Sequence[str], limit: int
) -> list[float]:
    """Ms of an exact vector search as one call: each text embedded, then numpy's scan.

    The issue-37 floor adds two medians each measured in its own tight loop, where neither
    step follows the other: the model's weights and threads stay warm between embeddings.
    Here each embedding follows the previous text's 123 MB scan (at 100k rows), as it
    follows a search's own steps in `search`, which costs it 2-3 ms on a 2-core host.
    """
    samples = []
    for text in texts:
        tick = time.perf_counter()
        _exact_top(matrix, real.embed([text])[0], limit)
        samples.append((time.perf_counter() - tick) * 1000)
    return samples


async def vector_recall(
    store: Container, queries: Vector, exact: Sequence[set[int]], limit: int
) -> float:
    """Recall@`limit` of the store's own vector search against the exact answer."""
    assert store.indexer is not None
    found = 0
    for q, truth in zip(queries, exact, strict=True):
        # As search asks: 4 candidates per hit (50 for 10), of which the best `limit` count.
        matches = await store.indexer.vectors.search_vectors("main", q, layer=None, limit=50)
        found += len(truth & {m.id for m in matches[:limit]})
    return round(found / (limit * len(exact)), 4)


async def timed_samples(
    calls: Sequence[Callable[[], Awaitable[Any]]], warmup: int = 3
) -> list[float]:
    """Milliseconds of each call, after a few warm-up calls."""
    for call in calls[:warmup]:
        await call()
    samples = []
    for call in calls:
        tick = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - tick) * 1000)
    return samples


def process_rss_mb() -> dict[str, float]:
    """This process's resident set now (VmRSS) and at its peak (VmHWM), in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name = line.split(":")[0]
        if name in ("VmRSS", "VmHWM"):
            out[name] = round(int(line.split()[1]) / 1024, 1)
    return out


def _median_summary(figures: Sequence[dict[str, float]]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(f["p50"] for f in figures), 3),
        "p95": round(statistics.median(f["p95"] for f in figures), 3),
        "n": sum(int(f["n"]) for f in figures),
    }


async def search_run(
    store: Container,
    real: Embedder,
    queries: Sequence[Query],
    reference: tuple[npt.NDArray[np.int64], Vector],
) -> dict[str, Any]:
    """One run over the query mix: the query embedding alone, numpy's exact top 10 over the
    same vectors, then each search mode (limit 10); hybrid also by query kind."""
    mem = store.memories
    out: dict[str, Any] = {"load_average": os.getloadavg()[0]}
    for q in queries[:5]:
        real.embed([q.text])  # warm up
    samples, vectors = [], []
    for q in queries:
        tick = time.perf_counter()
        vectors.append(real.embed([q.text])[0])
        samples.append((time.perf_counter() - tick) * 1000)
    query_vectors = np.stack(vectors)
    out["query_embedding_ms"] = summary(samples)
    numpy_ms, exact = numpy_exact(*reference, query_vectors, 10)
    out["numpy_exact_ms"] = summary(numpy_ms)
    out["embedding_then_exact_ms"] = summary(
        embedding_then_exact(real, reference[1], [q.text for q in queries], 10)
    )
    for mode in (SearchMode.KEYWORD, SearchMode.SEMANTIC, SearchMode.HYBRID):
        taken = await timed_samples(
            [
                partial(
                    mem.search, SearchRequest(project="main", query=q.text, mode=mode, limit=10)
                )
                for q in queries
            ]
        )
        out[f"search_{mode.value}_ms"] = summary(taken)
        if mode is SearchMode.HYBRID:
            out["hybrid_by_kind_ms"] = {
                kind: summary([t for t, q in zip(taken, queries, strict=True) if q.kind == kind])
                for kind in ("stored", "short", "long")
            }
    floor = out["numpy_exact_ms"]["p50"] + out["query_embedding_ms"]["p50"]
    out["hybrid_to_floor"] = {
        "p50": round(out["search_hybrid_ms"]["p50"] / floor, 2),
        "p95": round(out["search_hybrid_ms"]["p95"] / floor, 2),
    }
    in_sequence = out["embedding_then_exact_ms"]["p50"]
    out["hybrid_to_sequence"] = {
        "p50": round(out["search_hybrid_ms"]["p50"] / in_sequence, 2),
        "p95": round(out["search_hybrid_ms"]["p95"] / in_sequence, 2),
    }
    out["_exact"] = exact
    out["_vectors"] = query_vectors
    return out


async def measure_store(
    db: Path,
    size: int,
    corpus: Corpus,
    pool: Pool,
    real: Embedder,
    log: Callable[[str], None],
    runs: int = 1,
) -> dict[str, Any]:
    """Every per-size figure, on a built store (the store is changed: appends, then pruning).

    The searches run `runs` times over the same query mix; each figure is the median of the
    runs' figures (p50 of p50s, p95 of p95s), each run's own figures are kept under "runs".
    """
    out: dict[str, Any] = {}
    clock = BenchClock()
    pooled = PoolEmbedder(real)
    lazy = LazyEmbedder(lambda: pooled, model_id=MODEL_ID, dims=DIMS)
    rng = np.random.default_rng(5)
    # `serving`: searched as `serve` searches (the in-memory keyword postings of large projects).
    async with open_container(settings_for(db), clock, embedder=lazy, serving=True) as store:
        await lazy.wait()
        mem, tiers = store.memories, store.settings.tiers
        tick = time.perf_counter()
        changed = await maintenance.recalculate_tiers(store.repo, clock, tiers)
        out["recalculate_first"] = {
            "ms": round((time.perf_counter() - tick) * 1000, 1),
            "rows_changed": changed,
        }
        stats = await maintenance.memory_stats(store.repo, clock, tiers, "main")
        out["main_rows"] = stats.stats.total
        out["main_by_tier"] = {str(k): v for k, v in stats.stats.by_tier.items()}
        log(f"  main project: {out['main_rows']} rows {out['main_by_tier']}")

        # The query mix, then `runs` runs of: the query embedding alone, numpy's exact
        # search over the same vectors (the floor), each search mode (limit 10).
        queries = query_mix(corpus, pool, 100, await stored_texts(store, 50))
        out["queries"] = {
            kind: sum(q.kind == kind for q in queries) for kind in ("stored", "short", "long")
        }
        out["query_words_mean"] = round(statistics.mean(len(q.text.split()) for q in queries), 1)
        reference = await main_vectors(store)
        out["numpy_rows"] = int(reference[1].shape[0])
        # A server reads a large project's keyword postings after its first keyword search,
        # in the background (FTS5 answers meanwhile); the runs measure it once they are read.
        tick = time.perf_counter()
        await mem.search(SearchRequest(project="main", query=queries[0].text, limit=10))
        if store.backend is not None:
            await store.backend.settled()
        out["keyword_postings_read_ms"] = round((time.perf_counter() - tick) * 1000, 1)
        measured = []
        for n in range(runs):
            run = await search_run(store, real, queries, reference)
            measured.append(run)
            log(
                f"  run {n + 1}/{runs} (load {run['load_average']:.2f}): hybrid"
                f" {run['search_hybrid_ms']['p50']:.1f} / {run['search_hybrid_ms']['p95']:.1f}"
                f" ms, numpy {run['numpy_exact_ms']['p50']:.1f}, embedding"
                f" {run['query_embedding_ms']['p50']:.1f}: {run['hybrid_to_floor']};"
                f" embedding then numpy {run['embedding_then_exact_ms']['p50']:.1f}:"
                f" {run['hybrid_to_sequence']}; by kind p50"
                f" { {k: v['p50'] for k, v in run['hybrid_by_kind_ms'].items()} }"
            )
        out["vector_recall_at_10"] = await vector_recall(
            store, measured[-1]["_vectors"], measured[-1]["_exact"], 10
        )
        del reference
        for run in measured:
            del run["_vectors"], run["_exact"]
        for name in (
            "query_embedding_ms",
            "numpy_exact_ms",
            "embedding_then_exact_ms",
            "search_keyword_ms",
            "search_semantic_ms",
            "search_hybrid_ms",
        ):
            out[name] = _median_summary([r[name] for r in measured])
        out["hybrid_by_kind_ms"] = {
            kind: _median_summary([r["hybrid_by_kind_ms"][kind] for r in measured])
            for kind in ("stored", "short", "long")
        }
        for ratio in ("hybrid_to_floor", "hybrid_to_sequence"):
            out[ratio] = {
                q: round(statistics.median(r[ratio][q] for r in measured), 2)
                for q in ("p50", "p95")
            }
        out["runs"] = measured
        out["rss_after_searches_mb"] = process_rss_mb()
        reference_p50 = out["numpy_exact_ms"]["p50"]
        embed_p50 = out["query_embedding_ms"]["p50"]
        out["ratio_to_numpy"] = {
            "keyword": round(out["search_keyword_ms"]["p50"] / reference_p50, 2),
            "semantic_without_embedding": round(
                (out["search_semantic_ms"]["p50"] - embed_p50) / reference_p50, 2
            ),
            "hybrid_without_embedding": round(
                (out["search_hybrid_ms"]["p50"] - embed_p50) / reference_p50, 2
            ),
            "hybrid": round(out["search_hybrid_ms"]["p50"] / reference_p50, 2),
        }
        log(
            f"  median of {runs}: hybrid {_cell(out['search_hybrid_ms'])} ms against numpy"
            f" {reference_p50:.1f} + embedding {embed_p50:.1f}: {out['hybrid_to_floor']};"
            f" against the embedding then numpy"
            f" {out['embedding_then_exact_ms']['p50']:.1f}: {out['hybrid_to_sequence']};"
            f" recall {out['vector_recall_at_10']}; RSS {out['rss_after_searches_mb']}"
        )

        # Reads other tools make.
        out["load_context_ms"] = await timed(
            [lambda: mem.load_context("main", limit=10) for _ in range(50)]
        )
        keys = await _some_keys(store, 40)
        recall_keys = keys + [f"missing key {i}" for i in range(10)]
        out["recall_ms"] = await timed([partial(mem.recall, "main", k) for k in recall_keys])
        n_stats = 20 if size <= 100_000 else 6
        out["get_memory_stats_ms"] = await timed(
            [
                lambda: maintenance.memory_stats(store.repo, clock, tiers, "main")
                for _ in range(n_stats)
            ],
            warmup=1,
        )
        log(f"  reads: load_context {out['load_context_ms']} recall {out['recall_ms']}")

        # Append throughput: fresh texts (not registered, so "with embeddings" uses the model).
        plain = dataclasses.replace(mem, indexer=None)
        fresh = iter(corpus.sentences(rng, 12_000))

        def items(n: int) -> list[AppendItem]:
            return [AppendItem(layer=Layer.EPISODIC, content=next(fresh)) for _ in range(n)]

        # Rows without vectors go to a project of their own, cleared afterwards, so the server
        # measured later does not start with a backfill of them.
        out["append"] = {
            "single_no_embeddings_per_s": await _rate(
                [partial(plain.append, "plain", i.layer, i.content) for i in items(500)]
            ),
            "batched_no_embeddings_per_s": await _rate(
                [partial(plain.append_many, "plain", items(1000)) for _ in range(5)], 1000
            ),
            "single_with_embeddings_per_s": await _rate(
                [partial(mem.append, "main", i.layer, i.content) for i in items(200)]
            ),
            **await batched_with_model(mem, real, items),
        }
        await plain.clear("plain", None, confirm=True)
        log(f"  append: {out['append']}")

        # A day later: the daily recalculation, then pruning (the tool's batched path).
        clock.at = NOW + timedelta(days=1)
        tick = time.perf_counter()
        changed = await maintenance.recalculate_tiers(store.repo, clock, tiers)
        out["recalculate_next_day"] = {
            "ms": round((time.perf_counter() - tick) * 1000, 1),
            "rows_changed": changed,
        }
        tick = time.perf_counter()
        changed = await maintenance.recalculate_tiers(store.repo, clock, tiers)
        out["recalculate_noop"] = {
            "ms": round((time.perf_counter() - tick) * 1000, 1),
            "rows_changed": changed,
        }

        async def progress(done: int, total: int) -> None:
            return None

        tick = time.perf_counter()
        pruned = await maintenance.prune_expired(
            store.repo, clock, tiers, project=None, limit=100_000, progress=progress
        )
        spent = time.perf_counter() - tick
        out["prune"] = {
            "ms": round(spent * 1000, 1),
            "rows": len(pruned.ids),
            "rows_per_s": round(len(pruned.ids) / spent) if spent else None,
        }
        log(f"  maintenance: {out['recalculate_next_day']} prune {out['prune']}")
        assert store.indexer is not None
        await store.indexer.aclose()
    return out


async def batched_with_model(
    mem: MemoryService, real: Embedder, items: Callable[[int], list[AppendItem]]
) -> dict[str, float]:
    """Batches of 500 appended with the real model, each beside the model alone on 500 more.

    The model sets the ceiling of a write with embeddings; timed in turns with the appends,
    the two rates see the same load, and their ratio is what the write path itself costs.
    A first batch, timed alone, pays what a process pays once: in a project too large for
    the int8 copy, filing its rows into the look-alike check's lists (SignLists).
    """
    tick = time.perf_counter()
    await mem.append_many("main", items(500))
    first = time.perf_counter() - tick
    appended, alone = 0.0, 0.0
    for _ in range(4):
        texts = [item.content for item in items(500)]
        tick = time.perf_counter()
        real.embed(texts)
        alone += time.perf_counter() - tick
        batch = items(500)
        tick = time.perf_counter()
        await mem.append_many("main", batch)
        appended += time.perf_counter() - tick
    return {
        "batched_with_embeddings_per_s": round(2000 / appended, 1),
        "model_alone_per_s": round(2000 / alone, 1),
        "batched_to_model": round(alone / appended, 2),
        "first_batch_s": round(first, 2),
    }


async def _rate(calls: Sequence[Callable[[], Awaitable[Any]]], per_call: int = 1) -> float:
    tick = time.perf_counter()
    for call in calls:
        await call()
    return round(len(calls) * per_call / (time.perf_counter() - tick), 1)


async def _some_keys(store: Container, n: int) -> list[str]:
    session = store.repo._session  # type: ignore[attr-defined]  # benchmark: sample keys
    async with session.read("bench: keys"):
        rows = await session.fetch(
            "SELECT key FROM context_snapshots WHERE project = 'main' AND layer = 'semantic'"
            " ORDER BY id LIMIT ?",
            (n * 50,),
        )
    return [str(r[0]) for r in rows][::50][:n]


# -- the server process -----------------------------------------------------------------


def _env(db: Path, **extra: str) -> dict[str, str]:
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": "main",
        "MEMSTRATA_LOG_LEVEL": "WARNING",
        "MEMSTRATA_SCHEDULE__ENABLED": "false",
        **extra,
    }
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _exe() -> str:
    return str(Path(sys.executable).parent / "memstrata")


def _server_pid() -> int:
    """The pid of the `memstrata serve` process this benchmark started (a child)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
            if fields[1] == me and b"serve" in cmdline:
                return int(stat.parent.name)
    raise RuntimeError("the server process was not found")


def _peak_rss_mb(pid: int) -> float:
    """VmHWM: the process's peak resident set size."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


async def server_figures(db: Path, repeats: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Cold start, recall round trips over stdio and HTTP, and the server's peak RSS."""
    out: dict[str, Any] = {}
    for preload in ("false", "true"):
        params = StdioServerParameters(
            command=_exe(), args=["serve"], env=_env(db, MEMSTRATA_EMBEDDING_PRELOAD=preload)
        )
        cold = []
        for _ in range(repeats):
            tick = time.perf_counter()
            async with Client(params) as client:
                await client.list_tools()
                cold.append((time.perf_counter() - tick) * 1000)
        out[f"cold_start_to_tools_list_ms_preload_{preload}"] = summary(cold)
        log(f"  cold start (preload {preload}): {summary(cold)}")
    params = StdioServerParameters(
        command=_exe(), args=["serve"], env=_env(db, MEMSTRATA_EMBEDDING_PRELOAD="false")
    )
    async with Client(params, read_timeout_seconds=120) as client:
        await client.call_tool("learn", {"key": "user.editor", "value": "helix"})
        server = _server_pid()
        out["rss_mb_before_model"] = _peak_rss_mb(server)
        trips = []
        for _ in range(300):
            tick = time.perf_counter()
            await client.call_tool("recall", {"key": "user.editor"})
            trips.append((time.perf_counter() - tick) * 1000)
        out["recall_stdio_ms"] = summary(trips[20:])
        # The first semantic search starts the model load and falls back to keywords; wait
        # for the load, then search again so the peak covers a real model call.
        await client.call_tool("search", {"query": "weekly review of the deploy"})
        for _ in range(600):
            result = await client.call_tool("search", {"query": "deploy review notes"})
            if "still loading" not in json.dumps(result.structured_content):
                break
            await asyncio.sleep(0.1)
        for _ in range(20):
            await client.call_tool("search", {"query": "deploy review notes", "limit": 50})
        out["peak_rss_mb_model_loaded"] = _peak_rss_mb(server)
    log(f"  stdio: recall {out['recall_stdio_ms']} rss {out['peak_rss_mb_model_loaded']} MB")
    out["recall_http_ms"] = await _http_round_trips(db)
    log(f"  http: recall {out['recall_http_ms']}")
    return out


async def _http_round_trips(db: Path) -> dict[str, float]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(  # noqa: ASYNC220  # a server for the benchmark's lifetime
        [_exe(), "serve", "--http", "--port", str(port)],
        env=_env(db, MEMSTRATA_EMBEDDING_PRELOAD="false"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(200):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            await asyncio.sleep(0.05)
        async with Client(url, read_timeout_seconds=60) as client:
            await client.call_tool("learn", {"key": "user.editor", "value": "helix"})
            trips = []
            for _ in range(300):
                tick = time.perf_counter()
                await client.call_tool("recall", {"key": "user.editor"})
                trips.append((time.perf_counter() - tick) * 1000)
        return summary(trips[20:])
    finally:
        process.terminate()
        process.wait(timeout=20)


# -- report -----------------------------------------------------------------------------


def _cell(figure: dict[str, float]) -> str:
    return f"{figure['p50']:.1f} / {figure['p95']:.1f}"


def markdown(results: dict[str, Any]) -> str:
    """The per-size tables and the server table, as docs/benchmarks.md shows them."""
    lines = []
    for s in results["stores"]:
        a, r = s["append"], s["ratio_to_numpy"]
        floor, kinds = s["hybrid_to_floor"], s["hybrid_by_kind_ms"]
        rss = s["rss_after_searches_mb"]
        loads = ", ".join(f"{r['load_average']:.1f}" for r in s["runs"])
        lines += [
            f"### {s['size']:,} memories (main project {s['main_rows']:,} rows)",
            "",
            f"Search against its floor, median of {len(s['runs'])} run(s) (load"
            f" {loads}); queries:"
            f" {s['queries']}, {s['query_words_mean']} words on average:",
            "",
            "| hybrid p50 / p95 | numpy exact p50 | embedding p50 | hybrid / (exact + embedding)"
            " p50, p95 | vector recall@10 | RSS after (MB) | batched appends with the model |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {_cell(s['search_hybrid_ms'])} | {s['numpy_exact_ms']['p50']:.1f} |"
            f" {s['query_embedding_ms']['p50']:.1f} | **{floor['p50']}x, {floor['p95']}x** |"
            f" {s['vector_recall_at_10']:.3f} | {rss.get('VmRSS')} (peak {rss.get('VmHWM')}) |"
            f" {a['batched_with_embeddings_per_s']:.0f}/s (model alone"
            f" {a.get('model_alone_per_s', 0):.0f}/s; first batch"
            f" {a.get('first_batch_s', 0):.1f} s) |",
            "",
            f"Hybrid p50 / p95 by query kind: stored texts, two words dropped"
            f" {_cell(kinds['stored'])}; fresh 5-15 words {_cell(kinds['short'])}; fresh 20-30"
            f" words {_cell(kinds['long'])}.",
            "",
            "| measure | p50 / p95 (ms) | note |",
            "| --- | ---: | --- |",
            f"| query embedding alone | {_cell(s['query_embedding_ms'])} | MiniLM int8 |",
            f"| search keyword | {_cell(s['search_keyword_ms'])} | {r['keyword']}x numpy |",
            f"| search semantic (incl. embedding) | {_cell(s['search_semantic_ms'])} |"
            f" {r['semantic_without_embedding']}x numpy without the embedding |",
            f"| search hybrid (incl. embedding) | {_cell(s['search_hybrid_ms'])} |"
            f" {r['hybrid_without_embedding']}x numpy without the embedding, {r['hybrid']}x"
            " with |",
            f"| numpy exact cosine top-10 ({s['numpy_rows']:,} vectors) |"
            f" {_cell(s['numpy_exact_ms'])} | reference; the store's vector search finds"
            f" {s['vector_recall_at_10']:.3f} of its top 10 |",
            f"| the query embedding, then numpy's top-10, per query |"
            f" {_cell(s['embedding_then_exact_ms'])} | an exact search as one call; hybrid"
            f" {s['hybrid_to_sequence']['p50']}x its p50 (p95"
            f" {s['hybrid_to_sequence']['p95']}x) |",
            f"| load_context (limit 10) | {_cell(s['load_context_ms'])} | |",
            f"| recall | {_cell(s['recall_ms'])} | |",
            f"| get_memory_stats | {_cell(s['get_memory_stats_ms'])} | |",
            f"| recalculate tiers, first (ms) | {s['recalculate_first']['ms']:.0f} |"
            f" {s['recalculate_first']['rows_changed']:,} rows changed |",
            f"| recalculate tiers, a day later (ms) | {s['recalculate_next_day']['ms']:.0f} |"
            f" {s['recalculate_next_day']['rows_changed']:,} rows changed |",
            f"| recalculate tiers, nothing to change (ms) | {s['recalculate_noop']['ms']:.0f} | |",
            f"| prune expired, limit 100k (ms) | {s['prune']['ms']:.0f} |"
            f" {s['prune']['rows']:,} rows, {s['prune']['rows_per_s']}/s |",
            "",
            "| append (memories/s) | single | batched (1,000; 500 with embeddings) |",
            "| --- | ---: | ---: |",
            f"| without embeddings | {a['single_no_embeddings_per_s']:.0f} |"
            f" {a['batched_no_embeddings_per_s']:.0f} |",
            f"| with embeddings (real model) | {a['single_with_embeddings_per_s']:.0f} |"
            f" {a['batched_with_embeddings_per_s']:.0f} |",
            "",
            f"Build: {s['build']['rows']:,} rows in {s['build']['build_s']:.0f} s"
            f" ({s['build']['build_rows_per_s']:,}/s, pooled vectors);"
            f" {s['db_bytes_per_1k'] / 1e6:.2f} MB per 1k memories.",
            "",
        ]
    server = results.get("server")
    if server:
        lines += [
            f"### Server process (store of {server['store_size']:,} memories)",
            "",
            "| measure | p50 / p95 |",
            "| --- | ---: |",
            "| cold start to tools/list, stdio, preload off (ms) |"
            f" {_cell(server['cold_start_to_tools_list_ms_preload_false'])} |",
            "| cold start to tools/list, stdio, preload on (ms) |"
            f" {_cell(server['cold_start_to_tools_list_ms_preload_true'])} |",
            f"| recall round trip, stdio (ms) | {_cell(server['recall_stdio_ms'])} |",
            f"| recall round trip, HTTP (ms) | {_cell(server['recall_http_ms'])} |",
            f"| server RSS before the model (MB) | {server['rss_mb_before_model']} |",
            f"| server peak RSS, model loaded (MB) | {server['peak_rss_mb_model_loaded']} |",
            "",
        ]
    return "\n".join(lines)


async def run_size(
    args: argparse.Namespace,
    workdir: Path,
    size: int,
    corpus: Corpus,
    pool: Pool,
    real: Embedder,
    log: Callable[[str], None],
) -> dict[str, Any] | None:
    """Build (unless reusing) and measure one store size; None with --build-only."""
    db = workdir / f"scale-{size}.db"
    if not args.reuse or args.build_only:
        remove_db(db)
    log(f"size {size}")
    build: dict[str, Any] = {"rows": size, "build_s": 0, "build_rows_per_s": 0}
    if not db.exists():
        build = await build_store(db, size, corpus, pool, real, log)
    size_bytes = db_bytes(db)
    if args.build_only:
        return None
    measured = db
    if args.reuse:
        # Measuring changes a store (appends, pruning): work on a copy of the built one.
        measured = workdir / f"scale-{size}.work.db"
        remove_db(measured)
        shutil.copyfile(db, measured)
    figures = await measure_store(measured, size, corpus, pool, real, log, args.runs)
    return {
        "size": size,
        "build": build,
        "db_bytes": size_bytes,
        "db_bytes_per_1k": round(size_bytes / size * 1000),
        **figures,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": os.getloadavg(),
        },
        "command": " ".join(["python -m bench.scale", *sys.argv[1:]]),
        "stores": [],
    }
    corpus = Corpus(seed=7)
    real = MiniLMOnnxEmbedder()
    pool, pool_s = build_pool(corpus, min(POOL_MAX, max(args.sizes)), workdir / "cache", real)
    results["pool"] = {"texts": len(pool.texts), "embed_s": round(pool_s, 1)}
    log(f"pool of {len(pool.texts)} texts embedded in {pool_s:.1f} s")
    largest = None
    if args.server_only:
        # Re-measure the server process on a store an earlier run built (or measured).
        size = max(args.sizes)
        results["server"] = {
            "store_size": size,
            **await server_figures(workdir / f"scale-{size}.db", args.repeats, log),
        }
        return results
    for size in sorted(args.sizes):
        figures = await run_size(args, workdir, size, corpus, pool, real, log)
        if figures is not None:
            results["stores"].append(figures)
        largest = (size, workdir / f"scale-{size}.db")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    if largest is not None and not args.skip_server and not args.build_only:
        log("server process")
        results["server"] = {
            "store_size": largest[0],
            **await server_figures(largest[1], args.repeats, log),
        }
    results["machine"]["load_average_at_end"] = os.getloadavg()
    return results


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=10, help="cold starts to time")
    parser.add_argument(
        "--runs", type=int, default=1, help="runs of the searches (figures: their medians)"
    )
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument("--workdir", type=Path, help="where stores are built (default: a tmp dir)")
    parser.add_argument(
        "--reuse", action="store_true", help="measure a copy of stores built by an earlier run"
    )
    parser.add_argument("--build-only", action="store_true", help="build the stores, no figures")
    parser.add_argument(
        "--server-only", action="store_true", help="only the server figures, on an existing store"
    )
    parser.add_argument("--skip-server", action="store_true", help="no stdio/HTTP/RSS figures")
    args = parser.parse_args(argv)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
    results = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(markdown(results))


if __name__ == "__main__":
    main()
