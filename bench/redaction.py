"""What the redaction gate costs per write (a benchmark, not a test).

    python -m bench.redaction --rounds 7
    python -m bench.redaction --false-positives

Measures, medians of `rounds`: importing memory_core.domain.redaction in a fresh interpreter
(beyond `import pydantic`, which every process loads anyway); redacting a typical 2,000-character
memory without a secret; the same with five secrets; a 64-key metadata object; and a 5 MB
business document (the largest one `ingest_document` accepts) of ordinary prose.

`--false-positives` runs the gate over ordinary text instead and prints every redaction: the
docstrings of this interpreter's standard library (thousands of them say "password", "token",
"key" and "secret": getpass, tokenize, smtplib, hmac, secrets) and the paragraphs of this
repository's README and docs/.

Reading it: medians in ms per input; every write pays the gate, so the 2,000-character line
is the per-write cost. `--false-positives` should print almost nothing.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import JsonValue

from memory_core.domain.redaction import redact_json, redact_text

PROSE = (
    "We deployed the billing service to staging on Friday; the rollback plan is in the runbook. "
    "Commit 77bf536a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed the cache key, see ticket OPS-1234 "
    "and https://example.com/docs/path?query=1 for the design. The password policy says 12. "
)
SECRETS = (
    " AKIAIOSFODNN7EXAMPLE ghp_" + "a1B2" * 9 + " postgres://app:s3cr3t@db/app"
    " PASSWORD=hunter2 api_key=a8f3k2j9d8s7f6g5h4j3 "
)


def _median(fn: Callable[[], object], rounds: int, inner: int) -> float:
    runs = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        runs.append((time.perf_counter() - t) / inner)
    return statistics.median(runs)


def _import_ms(rounds: int) -> float:
    code = (
        "import time, pydantic; t = time.perf_counter(); "
        "import memory_core.domain.redaction; print(time.perf_counter() - t)"
    )
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(rounds)
    ]
    return statistics.median(runs) * 1000


def _docstrings() -> Iterator[tuple[str, str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py")):
        if {"test", "tests", "idlelib", "site-packages"} & set(path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    yield str(path.relative_to(stdlib)), doc


def _paragraphs() -> Iterator[tuple[str, str]]:
    for path in [Path("README.md"), *sorted(Path("docs").glob("**/*.md"))]:
        for paragraph in path.read_text().split("\n\n"):
            if paragraph.strip():
                yield str(path), paragraph


def _false_positives() -> None:
    for name, corpus in (("stdlib docstrings", list(_docstrings())), ("docs", list(_paragraphs()))):
        hits = 0
        for source, text in corpus:
            redacted, report = redact_text(text)
            if report.total:
                hits += 1
                for marker in re.finditer(r"\[REDACTED:[a-z_]+\]", redacted):
                    around = redacted[max(0, marker.start() - 50) : marker.end() + 10]
                    print(f"  {source}: {around!r}")
        chars = sum(len(text) for _, text in corpus)
        print(f"{name}: {hits} of {len(corpus)} texts ({chars:,} characters) redacted")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--false-positives", action="store_true")
    args = parser.parse_args()
    if args.false_positives:
        _false_positives()
        return
    rounds = args.rounds
    memory = (PROSE * 10)[:2000]
    with_secrets = memory[:1800] + SECRETS
    metadata: JsonValue = {f"field_{i}": f"value {i} of {PROSE[:60]}" for i in range(64)}
    document = (PROSE * (5_000_000 // len(PROSE) + 1))[:5_000_000]
    print(f"import (after pydantic): {_import_ms(rounds):.1f} ms")
    print(
        f"2,000 chars, no secret: {_median(lambda: redact_text(memory), rounds, 200) * 1e6:.0f} us"
    )
    print(
        f"2,000 chars, 5 secrets: "
        f"{_median(lambda: redact_text(with_secrets), rounds, 200) * 1e6:.0f} us"
    )
    print(f"64-key metadata: {_median(lambda: redact_json(metadata), rounds, 50) * 1e6:.0f} us")
    print(f"5 MB document: {_median(lambda: redact_text(document), rounds, 1) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
