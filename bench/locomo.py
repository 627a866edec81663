"""LoCoMo retrieval benchmark through memstrata's real storage and search code.

Loads a LoCoMo split (../shared/bench/README.md format) into a fresh SQLite database, one
project per conversation, runs every question through `MemoryService.search` scoped to its
conversation, writes a results file in the scorer's format and prints the scorer's table plus
index time and search latency.

    python -m bench.locomo                       # dev split, defaults
    python -m bench.locomo --data DIR --mode keyword --text plain
    python -m bench.locomo --db DB --vectors V.npz   # another model's vectors: turn_vectors.py

The clock is frozen for the whole run, so every memory has the same tier and recency: the
figures measure retrieval (BM25, vectors, fusion), not the tier signals. The data is licensed
CC BY-NC 4.0 and is read in place, never copied into this repository.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from bench.precomputed_vectors import TurnVectors, precomputed_indexer
from bench.store import open_bench_store
from memory_core.config.policies import RankingPolicy
from memory_core.domain.fts_query import search_words
from memory_core.domain.match import Match
from memory_core.domain.models import Layer, SearchHit, SearchMode
from memory_core.services.memories import SearchRequest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "bench"
DEFAULT_DATA = SHARED / "locomo_dev"
TEXT_FORMATS = ("plain", "speaker", "dated")


def render(
    memory: dict[str, Any],
    fmt: str,
    caption: bool,
    previous: dict[str, Any] | None = None,
    following: dict[str, Any] | None = None,
    context_words: int = 0,
) -> str:
    """The text stored for one dialog turn, optionally with its neighbouring turns.

    `context_words` > 0 keeps only that many words of each neighbouring turn.
    """

    def said(turn: dict[str, Any]) -> str:
        words = str(turn["text"]).split()
        if context_words and len(words) > context_words:
            return " ".join(words[:context_words]) + " ..."
        return str(turn["text"])

    text = memory["text"]
    if caption and memory.get("image_caption"):
        text = f"{text} [shares {memory['image_caption']}]"
    if previous is not None:
        text = f"{text} (replying to {previous['speaker']}: {said(previous)})"
    if following is not None:
        text = f"{text} (answered by {following['speaker']}: {said(following)})"
    if fmt == "plain":
        return str(text)
    if fmt == "speaker":
        return f"{memory['speaker']}: {text}"
    when = datetime.fromisoformat(memory["timestamp"])
    return f"({when:%-d %B %Y}) {memory['speaker']}: {text}"


# Where a question splits into clauses: commas, semicolons, and joining words.
_CLAUSE = re.compile(r"\s*(?:[,;]|\band\b|\bor\b|\bbut\b|\bafter\b|\bbefore\b|\bwhile\b)\s*")
# A question's opening question word, not a name.
_OPENERS = frozenset(
    (
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "did",
        "does",
        "do",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "would",
        "could",
        "should",
        "can",
        "will",
    )
)


def phrasings(question: str, kind: str) -> tuple[str, ...]:
    """Deterministic stand-ins for the rephrasings a client's model would add to a question.

    clauses: the question split at commas and joining words, each part of 2+ words (nothing
    when it does not split). entities: its capitalised words (names, places, titles) alone,
    without the opening question word. keywords: the question without its function words
    (what the keyword half searches anyway; the vector half then embeds only the content).
    """
    extra: list[str] = []
    if kind in ("clauses", "all"):
        parts = [p.strip(" ?.!") for p in _CLAUSE.split(question)]
        parts = [p for p in parts if len(p.split()) >= 2]
        if len(parts) > 1:
            extra += parts
    if kind in ("entities", "all"):
        names = [
            w.strip("?.,!'\"").removesuffix("'s")
            for w in question.split()
            if w[:1].isupper() and w.strip("?.,!").lower() not in _OPENERS
        ]
        if names:
            extra.append(" ".join(names))
    if kind in ("keywords", "all"):
        words = search_words(question, drop_stopwords=True)
        if words:
            extra.append(" ".join(words))
    extra = [e for e in dict.fromkeys(extra) if e and e != question]
    return tuple(extra[:4])


def stored_texts(memories: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """The text stored for each turn, in order, as the options render it."""

    def neighbour(index: int, offset: int) -> dict[str, Any] | None:
        if not 0 <= index + offset < len(memories):
            return None
        here, other = memories[index], memories[index + offset]
        same = (other["conversation_id"], other["session"]) == (
            here["conversation_id"],
            here["session"],
        )
        return other if same else None

    texts = []
    for index, m in enumerate(memories):
        previous = neighbour(index, -1) if args.context >= 1 else None
        following = neighbour(index, +1) if args.context >= 2 else None
        texts.append(render(m, args.text, args.caption, previous, following, args.context_words))
    return texts


def write_texts(path: Path, args: argparse.Namespace) -> None:
    """What `bench.turn_vectors` embeds: each turn's stored text, and the questions."""
    memories = read_jsonl(args.data / "memories.jsonl")
    queries = read_jsonl(args.data / "queries.jsonl")
    body = {
        "turn_ids": [m["id"] for m in memories],
        "texts": stored_texts(memories, args),
        "questions": [q["question"] for q in queries],
    }
    path.write_text(json.dumps(body), encoding="utf-8")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    memories = read_jsonl(args.data / "memories.jsonl")
    queries = read_jsonl(args.data / "queries.jsonl")
    db_path = args.db or Path(tempfile.mkdtemp(prefix="locomo-")) / "locomo.db"
    id_map = db_path.with_suffix(".ids.json")
    reuse = args.db is not None and id_map.exists()
    ranking = RankingPolicy(
        keyword_weight=args.keyword_weight,
        vector_weight=args.vector_weight,
        rrf_k=args.rrf_k,
        keyword_stopwords=args.stopwords,
        keyword_prefix_min_chars=args.prefix_min_chars,
        min_similarity=args.min_similarity,
        fusion=args.fusion,
        session_weight=args.session_weight,
        session_top=args.session_top,
        author_weight=args.author_weight,
        date_weight=args.date_weight,
        when_weight=args.when_weight,
        follow_weight=args.follow_weight,
    )
    stack = contextlib.AsyncExitStack()
    store = await stack.enter_async_context(
        open_bench_store(db_path, model=args.model, ranking=ranking)
    )
    service = store.memories
    indexer = service.indexer
    # Appends skip inline embedding; the backfill below embeds them in batches.
    loader = dataclasses.replace(service, indexer=None)

    # Index: every turn through the append path, then the vectors through the batched backfill
    # (the path a server takes for rows written while its model loads, and `reindex`).
    # Identical text in one conversation is one memory, so an id may stand for several turns.
    ids: dict[int, list[str]] = defaultdict(list)
    started = time.perf_counter()
    stored_as = {
        "text": args.text,
        "caption": args.caption,
        "context": args.context,
        "context_words": args.context_words,
        "author": args.author,
        "occurred": args.occurred,
    }
    if reuse:
        # Tuning ranking flags only: the store of an earlier run with the same text options.
        saved = json.loads(id_map.read_text())
        if saved.get("stored_as") != stored_as:
            raise SystemExit(
                f"{db_path} was built with {saved.get('stored_as')}, not {stored_as}; "
                "use another --db"
            )
        ids.update({int(k): v for k, v in saved["ids"].items()})
    else:
        for m, text in zip(memories, stored_texts(memories, args), strict=True):
            result = await loader.append(
                m["conversation_id"],
                Layer.EPISODIC,
                text,
                metadata={
                    "locomo_id": m["id"],
                    "speaker": m["speaker"],
                    "timestamp": m["timestamp"],
                },
                session_id=f"{m['conversation_id']}:S{m['session']}",
                author=m["speaker"] if args.author else None,
                # The session's date: "yesterday" in a turn counts from it (issue 20).
                occurred_at=datetime.fromisoformat(m["timestamp"]).replace(tzinfo=UTC)
                if args.occurred
                else None,
            )
            ids[result.outcome.memory.id].append(m["id"])
        if indexer is not None:
            embedder = indexer.source.current()
            assert embedder is not None
            await indexer.backfill(embedder)
        if args.db is not None:
            id_map.write_text(json.dumps({"stored_as": stored_as, "ids": ids}))
    index_seconds = time.perf_counter() - started
    if args.vectors is not None:
        # Another model's vectors as the vector half (bench.precomputed_vectors).
        assert indexer is not None, "--vectors needs the vector half (not --model none)"
        project_of = {m["id"]: m["conversation_id"] for m in memories}
        service = dataclasses.replace(
            service,
            indexer=await precomputed_indexer(
                indexer, TurnVectors.load(args.vectors), dict(ids), project_of
            ),
        )

    latencies: list[float] = []
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    conversations = sorted({q["conversation_id"] for q in queries})
    signals = args.signals.open("w", encoding="utf-8") if args.signals else None
    with out.open("w", encoding="utf-8") as fh:
        for q in queries:
            t = time.perf_counter()
            found = await service.search(
                SearchRequest(
                    project=q["conversation_id"],
                    query=q["question"],
                    queries=phrasings(q["question"], args.phrasings),
                    mode=SearchMode(args.mode),
                    limit=100,
                    min_match=Match(args.min_match) if args.min_match else None,
                )
            )
            latencies.append((time.perf_counter() - t) * 1000)
            ranked = [lid for h in found.hits for lid in ids[h.memory.id]]
            if signals is not None:
                await _write_signals(signals, service, q, found.hits, ids, conversations, args)
            fh.write(json.dumps({"qid": q["qid"], "ranked_ids": ranked[:100]}) + "\n")
    await stack.aclose()
    if signals is not None:
        signals.close()
    latencies.sort()
    return {
        "memories": len(memories),
        "queries": len(queries),
        "index_seconds": round(index_seconds, 2),
        "index_per_second": round(len(memories) / index_seconds, 1),
        "search_ms_p50": round(statistics.median(latencies), 2),
        "search_ms_p95": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
        "search_ms_max": round(latencies[-1], 2),
    }


async def _write_signals(
    fh: Any,
    service: Any,
    q: dict[str, Any],
    hits: list[SearchHit],
    ids: dict[int, list[str]],
    conversations: list[str],
    args: argparse.Namespace,
) -> None:
    """One line per top-10 hit: its cosine, word share and match band, and what it is.

    `kind` is "evidence" (a turn LoCoMo labels as evidence), "other" (another turn of the same
    conversation) or "elsewhere" (a hit of the same question asked of the next conversation,
    where nothing can be evidence): the calibration table of docs/benchmarks.md.
    """
    relevant = set(q["relevant_ids"])
    elsewhere = conversations[(conversations.index(q["conversation_id"]) + 1) % len(conversations)]
    foreign = await service.search(
        SearchRequest(project=elsewhere, query=q["question"], mode=SearchMode(args.mode))
    )
    rows = [(h, "evidence" if relevant & set(ids[h.memory.id]) else "other") for h in hits[:10]]
    rows += [(h, "elsewhere") for h in foreign.hits[:10]]
    for rank, (h, kind) in enumerate(rows, start=1):
        d = h.signals.vector_distance
        line = {
            "qid": q["qid"],
            "category": q["category"],
            "rank": (rank - 1) % 10 + 1,
            "kind": kind,
            "cosine": None if d is None else round(1 - d, 4),
            "words": h.signals.word_share,
            "match": h.signals.match.value,
        }
        fh.write(json.dumps(line) + "\n")


def main(argv: list[str] | None = None) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="split directory")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "locomo.jsonl")
    parser.add_argument("--mode", choices=[m.value for m in SearchMode], default="hybrid")
    parser.add_argument("--model", default="all-MiniLM-L6-v2-int8", help="embedding model")
    parser.add_argument("--text", choices=TEXT_FORMATS, default="dated", help="indexed text")
    parser.add_argument(
        "--caption",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="append the shared image's caption",
    )
    parser.add_argument("--keyword-weight", type=float, default=RankingPolicy().keyword_weight)
    parser.add_argument("--vector-weight", type=float, default=RankingPolicy().vector_weight)
    parser.add_argument("--rrf-k", type=float, default=RankingPolicy().rrf_k)
    parser.add_argument(
        "--context",
        type=int,
        choices=[0, 1, 2],
        default=1,
        help="index each turn with 0: nothing else, 1: the turn it replies to, 2: and its reply",
    )
    parser.add_argument(
        "--context-words",
        type=int,
        default=0,
        help="keep only this many words of each neighbouring turn (0: all)",
    )
    parser.add_argument(
        "--stopwords",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drop function words from the keyword query",
    )
    parser.add_argument(
        "--prefix-min-chars",
        type=int,
        default=RankingPolicy().keyword_prefix_min_chars,
        help="query words this long also match as prefixes (0: off)",
    )
    parser.add_argument("--fusion", choices=["rrf", "convex"], default=RankingPolicy().fusion)
    parser.add_argument("--min-similarity", type=float, default=RankingPolicy().min_similarity)
    parser.add_argument(
        "--session-weight",
        type=float,
        default=RankingPolicy().session_weight,
        help="lift from the memory's session (0: off)",
    )
    parser.add_argument("--session-top", type=int, default=RankingPolicy().session_top)
    parser.add_argument(
        "--author",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="store each turn's speaker as the memory's author",
    )
    parser.add_argument(
        "--author-weight",
        type=float,
        default=RankingPolicy().author_weight,
        help="lift for memories whose author the question names (0: off)",
    )
    parser.add_argument(
        "--occurred",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="store each turn's session date as its occurred_at (relative dates count from it)",
    )
    parser.add_argument(
        "--date-weight",
        type=float,
        default=RankingPolicy().date_weight,
        help="lift for memories whose dates fit the time a question names (0: off)",
    )
    parser.add_argument(
        "--when-weight",
        type=float,
        default=RankingPolicy().when_weight,
        help="lift, for 'when' questions, of memories that say when something happened (0: off)",
    )
    parser.add_argument(
        "--follow-weight",
        type=float,
        default=RankingPolicy().follow_weight,
        help="lift for memories whose next memory in the session matches (0: off)",
    )
    parser.add_argument(
        "--db", type=Path, help="keep the store here and reuse it on the next run (tuning)"
    )
    parser.add_argument(
        "--phrasings",
        choices=["none", "clauses", "entities", "keywords", "all"],
        default="none",
        help="also search deterministic rephrasings of each question (`queries`; see phrasings)",
    )
    parser.add_argument(
        "--min-match",
        choices=["partial", "strong"],
        help="leave out hits matching more weakly (what recall a client gives up with it)",
    )
    parser.add_argument(
        "--texts-out",
        type=Path,
        help="only write each turn's stored text and the questions here (for bench.turn_vectors)",
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        help="search by these vectors (an .npz of bench.turn_vectors) instead of the store's",
    )
    parser.add_argument("--json", type=Path, help="write timings and metrics as JSON here")
    parser.add_argument(
        "--signals",
        type=Path,
        help="write each top-10 hit's cosine, word share and match band here (calibration; "
        "also asks each question of the next conversation, whose hits cannot be evidence)",
    )
    args = parser.parse_args(argv)
    if args.texts_out is not None:
        write_texts(args.texts_out, args)
        return
    timings = asyncio.run(run(args))
    scorer = SHARED / "score.py"
    metrics_path = args.out.with_suffix(".metrics.json")
    table = subprocess.run(
        [
            sys.executable,
            str(scorer),
            str(args.data / "queries.jsonl"),
            str(args.out),
            "--memories",
            str(args.data / "memories.jsonl"),
            "--json",
            str(metrics_path),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    print(table.stdout, end="")
    if table.stderr.strip():
        print(table.stderr.strip(), file=sys.stderr)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    print(json.dumps({"settings": settings, **timings}))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "settings": settings,
                    **timings,
                    "metrics": json.loads(metrics_path.read_text()),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
