"""Fewer glibc malloc arenas for a process that will embed and search on many threads.

Trigger: a long-lived server (`memstrata serve`) about to start its threads: the SQLite
connections', the embedding workers', onnxruntime's. Why: glibc gives threads up to 8 malloc
arenas per core, and memory freed in one arena stays there; a server on a 100k store grew from
352 to 374 MB over 3,000 hybrid searches and kept it (peak 374), where with two arenas it stayed
at 332-335 MB (peak 345; bench.server_rss, issue 37). The cap must be set before those threads
exist: set when the model loads, the server still reached 372 MB. Outcome: at most `arenas`
arenas; no change off glibc (musl, macOS) or where MALLOC_ARENA_MAX is set (it wins).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["cap_malloc_arenas"]

# mallopt's parameter for the most arenas (glibc malloc.h).
_M_ARENA_MAX = -8


def cap_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas at `arenas`; True if the cap was set. Call before threads."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False
