"""What the redaction gate costs per write (a benchmark, not a test).

    python -m bench.redaction --rounds 7

Measures, medians of `rounds`: importing memory_core.domain.redaction in a fresh interpreter
(beyond `import pydantic`, which every process loads anyway); redacting a typical 2,000-character
memory without a secret; the same with five secrets; a 64-key metadata object; and a 5 MB
business document (the largest one `ingest_document` accepts) of ordinary prose.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
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
