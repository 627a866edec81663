"""How far the budget counter (chars/4) is from the all-MiniLM-L6-v2 WordPiece tokenizer.

Counts every LoCoMo turn of a split both ways and prints the ratio estimate / tokenizer: in
total, per turn (median, 5th and 95th percentile, how often the estimate is lower), on 20-turn
texts (the size budgets cut), and the time per text of each. The data is read in place.

    python -m bench.token_gap                  # dev split
    python -m bench.token_gap --data DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench.locomo import DEFAULT_DATA
from memory_core.domain.tokens import count_tokens
from memory_core.embeddings.wordpiece import WordPieceTokenCounter


def main() -> None:
    """Print the gap table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    with (args.data / "memories.jsonl").open(encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    wordpiece = WordPieceTokenCounter()
    est = [count_tokens(t) for t in texts]
    real = [wordpiece.count(t) for t in texts]
    ratios = [e / r for e, r in zip(est, real, strict=True) if r]
    q = statistics.quantiles(ratios, n=20)
    lower = sum(e < r for e, r in zip(est, real, strict=True))
    print(
        f"turns {len(texts)}: estimate {sum(est)}, tokenizer {sum(real)}, "
        f"ratio {sum(est) / sum(real):.3f}"
    )
    print(
        f"per turn: median {statistics.median(ratios):.3f}, p5 {q[0]:.3f}, p95 {q[-1]:.3f}, "
        f"estimate lower on {lower / len(texts):.1%}"
    )
    windows = [" ".join(texts[i : i + 20]) for i in range(0, len(texts) - 19, 20)]
    w = [count_tokens(x) / wordpiece.count(x) for x in windows]
    print(
        f"20-turn texts ({len(w)}): median {statistics.median(w):.3f}, "
        f"min {min(w):.3f}, max {max(w):.3f}"
    )
    for name, fn in (("estimate", count_tokens), ("tokenizer", wordpiece.count)):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        print(f"{name}: {(time.perf_counter() - start) / len(texts) * 1e6:.1f} us a turn")


if __name__ == "__main__":
    main()
