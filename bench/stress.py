"""Many `memstrata serve` processes on one database file, appending and searching at once.

    .venv/bin/python -m bench.stress --processes 4 --appends 2000

Each process is a real stdio server driven by the SDK client. Afterwards every acknowledged
append must be in the database exactly once, no client may have seen "database is locked",
and `PRAGMA integrity_check` must say ok. Prints appends/s, errors and lost.

Reading it: `lost`, `duplicated` and `locked_errors` must be 0 and `integrity` ok;
`appends_per_s` is the throughput of the processes together.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlean
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

PROJECT = "stress"


@dataclass
class WorkerResult:
    """What one client saw."""

    acked: dict[str, int] = field(default_factory=dict)  # content -> id returned
    searches: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class StressResult:
    """The whole run, checked against the database afterwards."""

    processes: int
    appends_per_process: int
    seconds: float
    acked: int
    searches: int
    errors: list[str]
    locked_errors: int
    lost: list[str]
    duplicated: list[str]
    wrong_id: list[str]
    integrity: str

    @property
    def appends_per_second(self) -> float:
        """Acknowledged appends per wall-clock second, all processes together."""
        return self.acked / self.seconds if self.seconds else 0.0

    @property
    def ok(self) -> bool:
        """Nothing lost, duplicated or misreported, no error, and an intact file."""
        return not (self.errors or self.lost or self.duplicated or self.wrong_id) and (
            self.integrity == "ok"
        )

    def summary(self) -> dict[str, Any]:
        """The figures docs/reliability.md records."""
        return {
            "processes": self.processes,
            "appends_per_process": self.appends_per_process,
            "acked": self.acked,
            "searches": self.searches,
            "seconds": round(self.seconds, 2),
            "appends_per_s": round(self.appends_per_second, 1),
            "errors": len(self.errors),
            "locked_errors": self.locked_errors,
            "lost": len(self.lost),
            "duplicated": len(self.duplicated),
            "wrong_id": len(self.wrong_id),
            "integrity": self.integrity,
        }


def server_params(db: Path, *, embedding: str = "none") -> StdioServerParameters:
    """`memstrata serve` (next to this interpreter) on `db`, with a minimal environment."""
    env = {
        "MEMSTRATA_DB": str(db),
        "MEMSTRATA_PROJECT": PROJECT,
        "MEMSTRATA_EMBEDDING_MODEL": embedding,
        "MEMSTRATA_LOG_LEVEL": "WARNING",
    }
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    exe = Path(sys.executable).parent / "memstrata"
    return StdioServerParameters(command=str(exe), args=["serve"], env=env)


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def _worker(
    n: int,
    db: Path,
    appends: int,
    search_every: int,
    errlog: Path,
    ready: asyncio.Event,
    start: asyncio.Event,
    embedding: str,
) -> WorkerResult:
    out = WorkerResult()
    with errlog.open("a", encoding="utf-8") as err:
        async with Client(
            stdio_client(server_params(db, embedding=embedding), errlog=err),
            read_timeout_seconds=60,
        ) as client:
            ready.set()
            await start.wait()
            for i in range(appends):
                content = f"worker {n} append {i} token{uuid.uuid4().hex[:12]}"
                try:
                    result = await client.call_tool(
                        "append", {"layer": "episodic", "content": content}
                    )
                except Exception as exc:  # a transport failure counts as an error too
                    out.errors.append(f"append: {type(exc).__name__}: {exc}")
                    continue
                if result.is_error or result.structured_content is None:
                    out.errors.append(f"append: {_text(result)}")
                    continue
                out.acked[content] = int(result.structured_content["id"])
                if search_every and i % search_every == 0:
                    found = await client.call_tool(
                        "search", {"query": f"worker {n}", "mode": "keyword", "limit": 5}
                    )
                    if found.is_error:
                        out.errors.append(f"search: {_text(found)}")
                    else:
                        out.searches += 1
    return out


def check_database(db: Path, acked: dict[str, int]) -> tuple[list[str], list[str], list[str], str]:
    """Lost, duplicated and wrong-id contents among `acked`, and the integrity check result."""
    conn = sqlean.connect(str(db))
    try:
        rows: dict[str, list[int]] = {}
        for memory_id, content in conn.execute(
            "SELECT id, content FROM context_snapshots WHERE project = ?", (PROJECT,)
        ):
            rows.setdefault(content, []).append(int(memory_id))
        integrity = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()
    lost = [c for c in acked if c not in rows]
    duplicated = [c for c in acked if len(rows.get(c, [])) > 1]
    wrong = [c for c, i in acked.items() if c in rows and rows[c] != [i]]
    return lost, duplicated, wrong, integrity


async def run_stress(
    db: Path,
    *,
    processes: int = 4,
    appends: int = 2000,
    search_every: int = 10,
    logs: Path | None = None,
    embedding: str = "none",
) -> StressResult:
    """Run `processes` servers on `db` at once, then check the database."""
    logs = logs or db.parent
    start = asyncio.Event()
    ready = [asyncio.Event() for _ in range(processes)]
    tasks = [
        asyncio.create_task(
            _worker(
                n, db, appends, search_every, logs / f"server{n}.log", ready[n], start, embedding
            )
        )
        for n in range(processes)
    ]
    # Every server starts (and migrates) before the clock runs; a worker that fails to start
    # ends the wait too, and its exception surfaces from gather below.
    all_ready: asyncio.Future[Any] = asyncio.ensure_future(
        asyncio.gather(*(e.wait() for e in ready))
    )
    pending: set[asyncio.Future[Any]] = {all_ready, *tasks}
    await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    all_ready.cancel()
    began = time.monotonic()
    start.set()
    results = await asyncio.gather(*tasks)
    seconds = time.monotonic() - began
    acked: dict[str, int] = {}
    errors: list[str] = []
    for r in results:
        acked.update(r.acked)
        errors.extend(r.errors)
    lost, duplicated, wrong, integrity = check_database(db, acked)
    return StressResult(
        processes=processes,
        appends_per_process=appends,
        seconds=seconds,
        acked=len(acked),
        searches=sum(r.searches for r in results),
        errors=errors,
        locked_errors=sum("locked" in e.lower() for e in errors),
        lost=lost,
        duplicated=duplicated,
        wrong_id=wrong,
        integrity=integrity,
    )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--appends", type=int, default=2000, help="appends per process")
    parser.add_argument("--search-every", type=int, default=10, help="a search every N appends")
    parser.add_argument("--embedding", default="none", help="MEMSTRATA_EMBEDDING_MODEL")
    parser.add_argument("--db", type=Path, help="database file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or Path(scratch) / "stress.db"
        result = asyncio.run(
            run_stress(
                db,
                processes=args.processes,
                appends=args.appends,
                search_every=args.search_every,
                logs=Path(scratch),
                embedding=args.embedding,
            )
        )
    print(json.dumps(result.summary()))
    for error in result.errors[:10]:
        print("error:", error)
    sys.exit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
