"""Calibrate `preferences_find`'s cut on a labelled set, for docs/benchmarks.md (not a test).

    python -m bench.preferences                   # the default model (all-MiniLM-L6-v2-int8)
    python -m bench.preferences --json /tmp/preferences.json

Reads tests/data/preference_relevance.json: a user's 12 situational rules and 24 situations,
each labelled with the one rule that applies (every other rule does not). Embeds the rules
as `preferences_find` does ("key: value") and each situation, then reports, for cuts from
0.05 to 0.60: precision, recall and F1 over all (situation, rule) pairs; and how often the
applicable rule ranks first (top-1) or in the first three among the user's rules, which is
what a user with few rules now receives.

Reading it: the cut with the best F1 is the default (`preference_similarity`); the top-1 and
top-3 rates are what ranking a user's few rules buys where no cut separates them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from memory_core.embeddings import load_embedder, parse_embedding_model

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "preference_relevance.json"
CUTS = [round(0.05 * i, 2) for i in range(1, 13)]


def scores(model: str = "default") -> tuple[list[str], list[str], np.ndarray]:
    """Rule keys, the label (applicable key) of each situation, and cosine[situation, rule]."""
    data = json.loads(DATA.read_text())
    keys = list(data["rules"])
    embedder = load_embedder(parse_embedding_model(model))
    rules = embedder.embed([f"{k}: {data['rules'][k]}" for k in keys])
    situations = embedder.embed([s["situation"] for s in data["situations"]])
    return keys, [s["rule"] for s in data["situations"]], situations @ rules.T


def calibrate(keys: list[str], labels: list[str], sims: np.ndarray) -> dict[str, Any]:
    """Precision/recall/F1 per cut, and top-1/top-3 of the applicable rule."""
    relevant = np.array([[k == label for k in keys] for label in labels])
    rows = []
    for cut in CUTS:
        kept = sims >= cut
        tp = int((kept & relevant).sum())
        precision = tp / max(int(kept.sum()), 1)
        recall = tp / int(relevant.sum())
        f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
        rows.append(
            {
                "cut": cut,
                "precision": round(precision, 3),
                "recall": round(recall, 3),
                "f1": round(f1, 3),
                "situations_with_none": int((~kept.any(axis=1)).sum()),
            }
        )
    order = np.argsort(-sims, axis=1)
    ranks = [
        int(np.where(order[i] == keys.index(label))[0][0]) + 1 for i, label in enumerate(labels)
    ]
    return {
        "pairs": int(sims.size),
        "applicable": int(relevant.sum()),
        "top1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
        "top3": round(sum(r <= 3 for r in ranks) / len(ranks), 3),
        "applicable_sims": sorted(
            round(float(sims[i, keys.index(lb)]), 3) for i, lb in enumerate(labels)
        ),
        "best_other_sim_max": round(float(np.where(relevant, -1, sims).max()), 3),
        "cuts": rows,
    }


def main(argv: list[str] | None = None) -> None:
    """Print the calibration table (and write it as JSON with --json)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = calibrate(*scores(args.model))
    out = sys.stdout
    out.write(f"pairs {report['pairs']}, applicable {report['applicable']}\n")
    out.write(f"top-1 {report['top1']}, top-3 {report['top3']}\n")
    out.write(f"cosine of applicable pairs: {report['applicable_sims']}\n")
    out.write(f"highest cosine of a non-applicable pair: {report['best_other_sim_max']}\n")
    out.write("cut  precision  recall  f1     situations with no rule\n")
    for r in report["cuts"]:
        out.write(
            f"{r['cut']:.2f} {r['precision']:9.3f} {r['recall']:7.3f} {r['f1']:6.3f}"
            f" {r['situations_with_none']:6d}\n"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
