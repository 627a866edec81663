"""A batched append's look-alike check at scale, against a search per text (a benchmark).

    python -m bench.scale --sizes 1000000 --build-only --workdir W     # once
    python -m bench.lookalike_check --workdir W --size 1000000
    python -m bench.lookalike_check --workdir W --size 100000 --lists   # the lists at 100k

Before a batch is written, `append_many` asks the vector index which new texts may duplicate
a stored memory (`any_close` at the duplicate band), and searches only those one by one. A
project over PRECISE_MAX_ROWS has no int8 copy to answer with, so it probes its SignLists.
On a store bench/scale.py built (MiniLM vectors), this measures how often that answer
differs from a search per text (`search_vectors` with the neighbours the check judges) and
from the truth (numpy over every vector of the layer), and what each costs. The texts: half
stored texts with a word dropped (as a retry writes them), half fresh sentences as
bench/scale.py appends them, embedded once by the real model, checked in batches of 500
(the first batch also files the project's rows: timed alone), then searched one by one.
Nothing is written to the store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from bench.scale import BenchClock, Corpus, settings_for, stored_texts
from memory_core.domain.duplicates import DuplicateThresholds
from memory_core.domain.models import Layer
from memory_core.embeddings import LazyEmbedder
from memory_core.embeddings.minilm_onnx import DIMS, MODEL_ID, MiniLMOnnxEmbedder
from memory_core.services.resemblance import NEIGHBOURS
from server.container import open_container

BATCH = 500


async def measure(db: Path, texts: int, log: Any) -> dict[str, Any]:
    real = MiniLMOnnxEmbedder()
    rng = np.random.default_rng(23)
    floor = DuplicateThresholds().duplicate_similarity  # what `append_many` asks about
    lazy = LazyEmbedder(lambda: real, model_id=MODEL_ID, dims=DIMS)
    out: dict[str, Any] = {"texts": texts, "floor": floor, "neighbours": NEIGHBOURS}
    async with open_container(settings_for(db), BenchClock(), embedder=lazy) as store:
        assert store.indexer is not None
        index: Any = store.indexer.vectors
        # Half retries (a stored text with one word dropped), half fresh sentences, in turns.
        retries = [_drop_word(rng, t) for t in await stored_texts(store, texts // 2)]
        fresh = Corpus(seed=7).sentences(rng, texts - len(retries))
        mixed = [t for pair in zip(retries, fresh, strict=True) for t in pair]
        vectors = [np.asarray(v, dtype=np.float32) for v in real.embed(mixed)]
        # The bits loaded by a first search, as a serving process has them before any batch.
        await index.search_vectors("main", vectors[0], layer=Layer.EPISODIC, limit=NEIGHBOURS)
        batched: list[bool] = []
        took: list[float] = []
        for start in range(0, texts, BATCH):
            tick = time.perf_counter()
            batched += await index.any_close(
                "main",
                Layer.EPISODIC,
                vectors[start : start + BATCH],
                min_similarity=floor,
                neighbours=NEIGHBOURS,
            )
            took.append(time.perf_counter() - tick)
        log(f"batches: {[round(t, 2) for t in took]} s")
        searched: list[bool] = []
        tick = time.perf_counter()
        for vector in vectors:
            hits = await index.search_vectors(
                "main", vector, layer=Layer.EPISODIC, limit=NEIGHBOURS
            )
            searched.append(any(1.0 - h.distance >= floor for h in hits))
        per_text = (time.perf_counter() - tick) / texts
        exact = await _exact_close(store, np.stack(vectors), floor)
        await store.indexer.aclose()
    later = took[1:] or took
    out.update(
        {
            "first_batch_s": round(took[0], 2),
            "batch_ms_per_text": round(statistics.median(later) / BATCH * 1000, 3),
            "search_ms_per_text": round(per_text * 1000, 3),
            "close_exactly": int(exact.sum()),
            "close_by_search": sum(searched),
            "close_by_batch": sum(batched),
            "search_missed": sum(bool(e) and not s for e, s in zip(exact, searched, strict=True)),
            "batch_missed": sum(bool(e) and not b for e, b in zip(exact, batched, strict=True)),
            "batch_missed_of_search": sum(
                s and not b for s, b in zip(searched, batched, strict=True)
            ),
        }
    )
    return out


def _drop_word(rng: np.random.Generator, text: str) -> str:
    words = text.split()
    drop = int(rng.integers(len(words)))
    return " ".join(w for j, w in enumerate(words) if j != drop)


async def _exact_close(store: Any, queries: Any, floor: float) -> Any:
    """Whether each query has an episodic row of the main project that close, by numpy."""
    session = store.repo._session  # benchmark: read raw vectors, in chunks
    best = np.full(len(queries), -1.0, dtype=np.float32)
    above = 0
    while True:
        async with session.read("bench: vectors"):
            rows = await session.fetch(
                "SELECT s.id, e.embedding FROM context_snapshots AS s"
                " JOIN context_embeddings AS e ON e.id = s.id WHERE s.project = 'main'"
                " AND s.layer = 'episodic' AND s.id > ? ORDER BY s.id LIMIT 50000",
                (above,),
            )
        if not rows:
            return best >= floor
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, DIMS)
        best = np.maximum(best, (matrix @ queries.T).max(axis=0))
        above = int(rows[-1][0])


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--texts", type=int, default=2_000)
    parser.add_argument(
        "--lists",
        action="store_true",
        help="probe the lists even in a project the int8 copy would answer for",
    )
    args = parser.parse_args(argv)
    if args.lists:
        from memory_core.storage.sqlite import vectors

        vectors.PRECISE_MAX_ROWS = 0

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    db = args.workdir / f"scale-{args.size}.db"
    started = os.getloadavg()[0]
    figures = asyncio.run(measure(db, args.texts, log))
    figures["load"] = [round(started, 1), round(os.getloadavg()[0], 1)]
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
