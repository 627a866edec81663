"""Calibrate search's match bands on a `bench.locomo --signals` file.

    python -m bench.match_bands /tmp/signals.jsonl [--strong-cosine 0.5 ...]

Prints, for the thresholds given (RankingPolicy's by default), the share of evidence turns,
other turns of the same conversation, and hits of the question asked of another conversation
("elsewhere", never evidence) in each band, over the top-10 hits; then the same share as the
cosine and word-share thresholds move one at a time, so a threshold can be set where its
neighbours agree.

Reading it: evidence should fall in strong or partial and hits of another conversation in
weak; a threshold is right where moving it one step changes these shares little.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from memory_core.config.policies import RankingPolicy
from memory_core.domain.match import Match, MatchThresholds, match_strength

KINDS = ("evidence", "other", "elsewhere")


def bands(rows: list[dict[str, Any]], t: MatchThresholds) -> dict[str, Counter[Match]]:
    """Hits per kind and band."""
    out: dict[str, Counter[Match]] = {k: Counter() for k in KINDS}
    for r in rows:
        out[r["kind"]][match_strength(r["cosine"], r["words"], t)] += 1
    return out


def table(rows: list[dict[str, Any]], t: MatchThresholds) -> str:
    """A markdown table: the share of each kind's hits in each band."""
    counted = bands(rows, t)
    lines = [
        "| hits (top 10) | n | strong | partial | weak |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind in KINDS:
        c = counted[kind]
        n = sum(c.values()) or 1
        cells = " | ".join(f"{c[m] / n:.3f}" for m in (Match.STRONG, Match.PARTIAL, Match.WEAK))
        lines.append(f"| {kind} | {sum(c.values())} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    policy = RankingPolicy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("signals", type=Path)
    parser.add_argument("--strong-cosine", type=float, default=policy.match_strong_cosine)
    parser.add_argument("--partial-cosine", type=float, default=policy.match_partial_cosine)
    parser.add_argument("--strong-words", type=float, default=policy.match_strong_words)
    parser.add_argument("--partial-words", type=float, default=policy.match_partial_words)
    args = parser.parse_args(argv)
    with args.signals.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    chosen = {
        "strong_cosine": args.strong_cosine,
        "partial_cosine": args.partial_cosine,
        "strong_words": args.strong_words,
        "partial_words": args.partial_words,
    }
    print(table(rows, MatchThresholds(**chosen)))
    print("\nstrong share (evidence / other / elsewhere) as one threshold moves:")
    for name, values in (
        ("strong_cosine", (0.4, 0.45, 0.5, 0.55, 0.6, 0.65)),
        ("partial_cosine", (0.25, 0.3, 0.35, 0.4, 0.45)),
        ("strong_words", (0.6, 0.75, 0.9, 1.0, 1.01)),
        ("partial_words", (0.25, 0.34, 0.5, 0.67, 1.01)),
    ):
        for v in values:
            counted = bands(rows, MatchThresholds(**{**chosen, name: v}))
            shares = []
            for kind in KINDS:
                c = counted[kind]
                n = sum(c.values()) or 1
                shares.append(f"{c[Match.STRONG] / n:.3f}/{c[Match.WEAK] / n:.3f}")
            print(f"  {name}={v}: strong/weak " + "  ".join(shares))


if __name__ == "__main__":
    main()
