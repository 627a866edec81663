"""The Dockerfile's promises, checked by reading it (hadolint lints it in `make lint`)."""

from __future__ import annotations

import json
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined]


def test_runtime_is_slim_non_root_with_a_data_volume() -> None:
    found = instructions()
    bases = [args for op, args in found if op == "FROM"]
    assert bases and all(b.startswith("python:3.11-slim") for b in bases)
    users = [args for op, args in found if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert any(op == "VOLUME" and "/data" in args for op, args in found)
    env = " ".join(args for op, args in found if op == "ENV")
    assert "MEMSTRATA_DB=/data/" in env


def test_serves_http_on_all_interfaces_and_so_requires_auth() -> None:
    found = instructions()
    entrypoint = json.loads(next(args for op, args in found if op == "ENTRYPOINT"))
    command = json.loads(next(args for op, args in found if op == "CMD"))
    argv = entrypoint + command
    assert argv[:3] == ["memstrata", "serve", "--http"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    # Without --insecure the server refuses a non-loopback bind unless a token is configured.
    assert "--insecure" not in argv
    env = " ".join(args for op, args in found if op == "ENV")
    assert "MEMSTRATA_AUTH_TOKENS" not in env  # no baked-in token: the operator supplies one
