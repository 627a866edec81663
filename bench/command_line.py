"""The command line of the benchmarks that measure a store bench/scale.py built."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import structlog

__all__ = ["store_parser"]


def store_parser(doc: str | None) -> argparse.ArgumentParser:
    """`--workdir` (where `bench.scale --build-only` left `scale-SIZE.db`) and `--size`.

    The server's own logs are quieted to warnings: a benchmark prints its figures only.
    """
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=100_000)
    return parser
