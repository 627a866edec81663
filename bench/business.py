"""Business-context ingest and search speed, for docs/business_context.md (not a test).

    python -m bench.business                         # 300 docs, the default model
    python -m bench.business --docs 300 --model none --json bench/results/business.json

Generates a folder of synthetic markdown documents (deterministic, seeded; no outside data),
ingests it with `ingest_path` through the server's own composition root, then times
`search_business_context`'s service call for a set of questions. Reports ingest throughput
(docs/s, chunks/s; the model loaded beforehand, so load time is not counted), search latency
p50/p95 (query embedding included), the brute-force vector step on its own, and store size.

Reading it: ingest is bound by the model (chunks/s); search p50 includes the query
embedding, the vector step alone shows what brute force costs; `--model none` is the keyword
floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from bench.store import open_bench_store
from memory_core.services.ingest_files import ingest_path

TOPICS: dict[str, list[str]] = {
    "refunds": ["refund", "receipt", "return", "store credit", "damaged item", "30 days"],
    "shipping": ["shipping", "courier", "customs", "tracking number", "parcel", "delivery"],
    "billing": ["invoice", "VAT", "payment terms", "credit card", "overdue", "billing cycle"],
    "security": ["password", "two-factor", "access badge", "VPN", "phishing", "encryption"],
    "onboarding": ["new hire", "laptop", "mentor", "first week", "training", "accounts"],
    "support": ["ticket", "escalation", "SLA", "priority", "on-call", "response time"],
    "warranty": ["warranty", "repair", "spare parts", "labour", "serial number", "claim"],
    "pricing": ["discount", "enterprise plan", "seat", "annual contract", "quote", "tier"],
    "travel": ["travel", "expense report", "per diem", "hotel", "flight", "reimbursement"],
    "privacy": ["personal data", "GDPR", "retention", "consent", "deletion request", "DPO"],
}
VERBS = ["must", "should", "may", "will", "is expected to", "can"]
ACTORS = ["the customer", "an employee", "the support team", "a manager", "finance", "the agent"]
FILLER = [
    "within two business days",
    "unless a manager approves an exception",
    "as described in the handbook",
    "for every region we operate in",
    "after checking the account history",
    "and the outcome is logged in the CRM",
]


def _sentence(rng: random.Random, topic: str) -> str:
    terms = TOPICS[topic]
    return (
        f"{rng.choice(ACTORS).capitalize()} {rng.choice(VERBS)} handle the "
        f"{rng.choice(terms)} and the {rng.choice(terms)} {rng.choice(FILLER)}."
    )


def generate_corpus(folder: Path, docs: int, seed: int = 7) -> int:
    """Write `docs` markdown files of 2-40 paragraphs; returns the characters written."""
    rng = random.Random(seed)
    total = 0
    for i in range(docs):
        topic = rng.choice(list(TOPICS))
        paragraphs = [f"# {topic.title()} policy {i}"]
        paragraphs.extend(
            " ".join(_sentence(rng, topic) for _ in range(rng.randint(2, 6)))
            for _ in range(rng.choice([2, 4, 8, 16, 40]))
        )
        text = "\n\n".join(paragraphs) + "\n"
        sub = folder / topic
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"doc-{i:04d}.md").write_text(text, encoding="utf-8")
        total += len(text)
    return total


def questions(n: int, seed: int = 11) -> list[str]:
    """Questions a user might ask of the corpus."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        topic = rng.choice(list(TOPICS))
        out.append(f"What happens with a {rng.choice(TOPICS[topic])} for {rng.choice(ACTORS)}?")
    return out


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


async def run(docs: int, model: str, queries: int) -> dict[str, Any]:
    """Generate, ingest and search; returns the measurements."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        chars = generate_corpus(folder, docs)
        db = Path(tmp) / "bench.db"
        async with open_bench_store(db, model=model) as store:
            service = store.knowledge.business
            started = time.perf_counter()
            report = await ingest_path(service, "bench", folder)
            ingest_s = time.perf_counter() - started
            again = time.perf_counter()
            unchanged = await ingest_path(service, "bench", folder)
            reingest_s = time.perf_counter() - again
            asked = questions(queries)
            await service.search("bench", asked[0])  # warm the tenant's vector matrix
            latencies, vector_only, hits = [], [], []
            for q in asked:
                t0 = time.perf_counter()
                found = await service.search("bench", q)
                latencies.append((time.perf_counter() - t0) * 1000)
                hits.append(len({h.chunk.source for h in found.hits}))
            embedder = store.embedder.current() if store.embedder else None
            if embedder is not None:
                vec = embedder.embed([asked[0]])[0]
                for _ in range(50):
                    t0 = time.perf_counter()
                    await service.store.vector_candidates(
                        "bench", vec, embedder.model_id, limit=100
                    )
                    vector_only.append((time.perf_counter() - t0) * 1000)
        size = db.stat().st_size + sum(
            p.stat().st_size for p in db.parent.glob("bench.db-*") if p.exists()
        )
    result: dict[str, Any] = {
        "model": model,
        "docs": report.files,
        "chars": chars,
        "chunks": report.chunks,
        "ingest_seconds": round(ingest_s, 2),
        "docs_per_s": round(report.files / ingest_s, 1),
        "chunks_per_s": round(report.chunks / ingest_s, 1),
        "reingest_unchanged_seconds": round(reingest_s, 3),
        "reingest_unchanged": unchanged.unchanged,
        "queries": len(latencies),
        "search_p50_ms": round(statistics.median(latencies), 2),
        "search_p95_ms": round(_pct(latencies, 95), 2),
        "distinct_sources_per_answer_mean": round(statistics.mean(hits), 2),
        "db_mb": round(size / 1e6, 1),
    }
    if vector_only:
        result["vector_step_p50_ms"] = round(statistics.median(vector_only), 3)
        result["vector_step_p95_ms"] = round(_pct(vector_only, 95), 3)
    return result


def main() -> None:
    """Parse arguments, run, print JSON (and write it with --json)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model", default="all-MiniLM-L6-v2-int8")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.disable(logging.INFO)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    result = asyncio.run(run(args.docs, args.model, args.queries))
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
