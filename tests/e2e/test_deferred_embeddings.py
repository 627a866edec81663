"""What a capture stores without vectors is embedded later, each row once, whatever kills it.

The real `memstrata hook session-end` captures a long session (its prompts and answers become
memories without vectors: a hook loads no model). Then `memstrata serve` (stdio, with the
model) starts, and its start-up backfill embeds them; it is SIGKILLed in the middle of the
backfill again and again (once just after a model call returned, before its vectors are
stored; once after some batches are stored), then runs to the end. Every memory must end with
exactly one vector, and no text is embedded again once its row has a vector: the model calls
are counted in the server process (a `sitecustomize` on PYTHONPATH wraps the embedder and
appends each text's hash to a file before the call returns). On SQLite and PostgreSQL;
nothing here asserts on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import asyncpg
import pytest
import sqlean

from memory_core.domain.inputs import content_hash
from memory_core.domain.models import Layer
from memory_core.services.indexing import embedding_text
from server.container import open_container
from server.settings import ScheduleSettings, Settings
from tests.e2e.conftest import memstrata_exe, run_session_end
from tests.pg import PostgresServer
from tests.playbook_transcripts import Session
from tests.runtime_dir import short_runtime_dir

pytestmark = pytest.mark.e2e

MODEL = "all-MiniLM-L6-v2-int8"
_TURNS = 160  # ~320 rows: five backfill batches of 64, so kills land between them
_LONG_WAIT = 180.0  # seconds: only a cap against a hung server, never a target

# Loaded by the server's interpreter (PYTHONPATH): every text the model embeds is appended,
# as its content hash, to MEMSTRATA_TEST_EMBED_LOG before the vectors are returned.
_SITECUSTOMIZE = """
import hashlib, os, time

_LOG = os.environ["MEMSTRATA_TEST_EMBED_LOG"]
# A model this slow keeps every backfill batch in flight for a while, so the kills land in the
# middle of the backfill however fast the machine embeds (a quiet one finished the ~320 rows
# before the fourth kill).
_PAUSE = float(os.environ.get("MEMSTRATA_TEST_EMBED_PAUSE", "0"))


def _counted(embed):
    def wrapper(self, texts):
        vectors = embed(self, texts)
        lines = "".join(hashlib.sha256(t.encode()).hexdigest() + "\\n" for t in texts)
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
        time.sleep(_PAUSE)  # logged, not yet returned: its vectors are not stored
        return vectors

    return wrapper


from memory_core.embeddings import minilm_onnx

minilm_onnx.MiniLMOnnxEmbedder.embed = _counted(minilm_onnx.MiniLMOnnxEmbedder.embed)
"""


def _transcript(path: Path) -> None:
    session = Session()
    for n in range(_TURNS):
        session.prompt(f"Which port does the queue worker {n} of the billing service listen on?")
        session.bash(f"grep -n port config/worker_{n}.toml", f"port = {9000 + n}")
        session.say(f"Worker {n} of billing listens on port {9000 + n}, set in its toml file.")
    path.write_text("".join(session.lines), encoding="utf-8")


def _embedded(log: Path) -> list[str]:
    """The hashes of every text embedded so far, in order."""
    return log.read_text().split() if log.exists() else []


_COUNTS = (
    "SELECT (SELECT count(*) FROM context_snapshots), (SELECT count(*) FROM context_embeddings),"
    " (SELECT count(DISTINCT id) FROM context_embeddings)"
)


def _with_vectors(store: dict[str, str]) -> set[int]:
    """The ids of the rows that have a vector (in the source-of-truth table)."""
    if "MEMSTRATA_DATABASE_URL" in store:
        return asyncio.run(
            _pg(store["MEMSTRATA_DATABASE_URL"], "SELECT id FROM context_embeddings")
        )
    with contextlib.closing(sqlean.connect(store["MEMSTRATA_DB"], timeout=30)) as conn:
        return {int(r[0]) for r in conn.execute("SELECT id FROM context_embeddings")}


async def _pg(url: str, sql: str) -> set[int]:
    conn = await asyncpg.connect(url)
    try:
        return {int(r[0]) for r in await conn.fetch(sql)}
    finally:
        await conn.close()


async def _pg_counts(url: str) -> tuple[int, ...]:
    conn = await asyncpg.connect(url)
    try:
        return tuple(int(v) for v in await conn.fetchrow(_COUNTS))
    finally:
        await conn.close()


def _vector_counts(store: dict[str, str]) -> tuple[int, ...]:
    """(memories, embeddings, distinct embedded ids[, SQLite's exact-search vectors])."""
    if "MEMSTRATA_DATABASE_URL" in store:
        return asyncio.run(_pg_counts(store["MEMSTRATA_DATABASE_URL"]))
    with contextlib.closing(sqlean.connect(store["MEMSTRATA_DB"], timeout=30)) as conn:
        conn.enable_load_extension(True)
        import sqlite_vec

        sqlite_vec.load(conn)
        counts = tuple(int(v) for v in conn.execute(_COUNTS).fetchone())
        (vectors,) = conn.execute("SELECT count(*) FROM context_vectors").fetchone()
    return (*counts, int(vectors))


async def _row_hashes(settings: Settings) -> dict[int, str]:
    """Each memory's id and the hash of the text it is embedded as."""
    async with open_container(settings) as c:
        rows = []
        for layer in Layer:
            rows += await c.repo.list_layer("shop", layer, None, newest_first=False)
    return {m.id: content_hash(embedding_text(m)) for m in rows}


class _Serve:
    """`memstrata serve` over stdio with the model, its stdin held open."""

    def __init__(self, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.log = log
        with log.open("wb") as errors:
            self.proc = subprocess.Popen(
                [str(memstrata_exe()), "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=env,
                cwd=cwd,
            )
        assert self.proc.stdin is not None
        self._stdin: IO[bytes] = self.proc.stdin

    def logged(self, event: str) -> bool:
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                if json.loads(line).get("event") == event:
                    return True
        return False

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=_LONG_WAIT)
        self._stdin.close()

    def close(self) -> None:
        self._stdin.close()
        self.proc.wait(timeout=_LONG_WAIT)


def _until(done: object, serve: _Serve, what: str) -> None:
    stop = time.monotonic() + _LONG_WAIT
    while not done():  # type: ignore[operator]
        assert serve.proc.poll() is None, serve.log.read_text()[-3000:]
        assert time.monotonic() < stop, f"no {what}: {serve.log.read_text()[-3000:]}"
        time.sleep(0.01)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """An empty store of one backend, as the environment variable that names it."""
    if request.param == "sqlite":
        yield {"MEMSTRATA_DB": str(tmp_path / "memory.db")}
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = asyncio.run(server.create_database())
    yield {"MEMSTRATA_DATABASE_URL": url}
    asyncio.run(server.drop_database(url))


def test_a_backfill_killed_again_and_again_embeds_every_captured_row_once(
    tmp_path: Path, store: dict[str, str]
) -> None:
    embed_log = tmp_path / "embedded.txt"
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    transcript = tmp_path / "session.jsonl"
    _transcript(transcript)
    with short_runtime_dir() as runtime:
        env = {
            **store,
            "MEMSTRATA_PROJECT": "shop",
            "MEMSTRATA_PROJECT_SCOPE": "fixed",
            "MEMSTRATA_EMBEDDING_MODEL": "none",
            "MEMSTRATA_SCHEDULE__ENABLED": "false",
            "XDG_RUNTIME_DIR": str(runtime),
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
        }
        run_session_end(env, tmp_path, Session().session_id, transcript, timeout=_LONG_WAIT)
        settings = Settings(
            db=Path(store.get("MEMSTRATA_DB", tmp_path / "unused.db")),
            database_url=store.get("MEMSTRATA_DATABASE_URL"),
            project="shop",
            schedule=ScheduleSettings(enabled=False),
            embedding_model="none",
        )
        rows = asyncio.run(_row_hashes(settings))
        assert len(rows) > 2 * _TURNS  # the prompts, the answers, the digest
        assert _with_vectors(store) == set()  # the hook embedded nothing

        serve_env = env | {
            "MEMSTRATA_EMBEDDING_MODEL": MODEL,
            "MEMSTRATA_LOG_LEVEL": "INFO",
            "MEMSTRATA_TEST_EMBED_LOG": str(embed_log),
            "MEMSTRATA_TEST_EMBED_PAUSE": "1.0",
            "PYTHONPATH": str(shim),
        }
        rng = random.Random(int.from_bytes(os.urandom(4), "big"))
        runs: list[tuple[set[int], list[str]]] = []  # (rows with vectors at start, embedded)
        killed_mid_backfill = 0
        for n in range(4):
            before, calls = _with_vectors(store), len(_embedded(embed_log))
            serve = _Serve(serve_env, tmp_path, tmp_path / f"serve-{n}.log")
            if n % 2 == 0:
                # Just after a model call returned: its vectors are not stored yet.
                _until(lambda: len(_embedded(embed_log)) > calls, serve, "embedding")  # noqa: B023
            else:
                # After some batches are stored, at a random moment within the next one.
                _until(lambda: len(_with_vectors(store)) > len(before), serve, "stored vector")  # noqa: B023
                time.sleep(rng.uniform(0.0, 0.5))
            serve.kill()
            runs.append((before, _embedded(embed_log)[calls:]))
            after = _with_vectors(store)
            killed_mid_backfill += len(after) < len(rows)
        before, calls = _with_vectors(store), len(_embedded(embed_log))
        assert len(before) < len(rows), "every kill came after the backfill had finished"
        serve = _Serve(serve_env, tmp_path, tmp_path / "serve-last.log")
        _until(lambda: serve.logged("vectors.backfilled"), serve, "vectors.backfilled")
        serve.close()
        runs.append((before, _embedded(embed_log)[calls:]))

    memories, *tables = _vector_counts(store)
    assert memories == len(rows)
    assert tables == [memories] * len(tables)  # one vector a row, in every table
    assert _with_vectors(store) == set(rows)
    assert killed_mid_backfill >= 3
    by_hash = {h: i for i, h in rows.items()}
    for stored_at_start, embedded in runs:
        # Never embedded again once its row holds a vector (the model's warm-up and query
        # texts are not rows).
        again = {by_hash[h] for h in embedded if h in by_hash} & stored_at_start
        assert again == set()
    last_start, last_embedded = runs[-1]
    mine = Counter(h for h in last_embedded if h in by_hash)
    # The last run embedded exactly what was left, each text once.
    assert set(mine) == {rows[i] for i in set(rows) - last_start}
    assert set(mine.values()) == {1}
