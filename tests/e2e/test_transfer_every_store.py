"""`memstrata export`/`import` carry every store, losslessly, within and across backends.

Every store is filled through the services (conversations compressed and folded, a tool
cache, scratchpad snippets promoted, preferences, playbooks, a document in several chunks,
embeddings from a fake model), then moved through real `memstrata` processes: SQLite ->
PostgreSQL -> SQLite (and the reverse). The exports, which hold every column of every
store's rows, must be identical at each hop.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.knowledge import PromotionTarget
from memory_core.domain.models import Layer
from memory_core.services.memories import MemoryService
from memory_core.services.truth import TruthService
from server.container import open_container
from server.settings import Settings
from tests.e2e.conftest import memstrata_exe, server_env
from tests.fakes import FrozenClock, ready_fake

pytestmark = pytest.mark.e2e

# Stores a seeded file must hold, with at least these many rows.
EVERY_KIND = {
    "memory": 6,
    "memory_version": 2,
    "conversation_session": 2,
    "conversation_summary": 1,
    "conversation_entry": 20,
    "conversation_exchange": 12,
    "tool_result": 1,
    "scratchpad_snippet": 3,
    "preference": 2,
    "playbook": 1,
    "document": 2,
    "document_chunk": 3,
    "document_revision": 1,
}


async def seed(settings: Settings) -> None:
    """Rows in every store, with the fields each feature sets (summaries, folds, promotions)."""
    lazy, _ = ready_fake()
    clock = FrozenClock()
    async with open_container(settings, clock, embedder=lazy) as c:
        await c.memories.append("alpha", Layer.EPISODIC, "Shipped v2 — with ünïcode")
        await c.memories.learn("alpha", "user.editor", "Helix")
        await c.memories.append("alpha", Layer.WORKING, "note", session_id="s1")
        await c.memories.append("beta", Layer.EPISODIC, "Beta kickoff", metadata={"by": "ci"})
        await truth(c.memories)

        conv = c.conversations
        await conv.start("alpha", "s1")
        await conv.start("beta", "other")
        for n in range(16):
            clock.advance(minutes=1)
            await conv.add_entry(
                "alpha", "s1", type=EntryType.MESSAGE, role=Role.USER, content=f"question {n}"
            )
        await conv.add_entry(
            "alpha", "s1", type=EntryType.TOOL_CALL, tool_name="grep", arguments={"q": "x"}
        )
        await conv.add_entry(
            "alpha", "s1", type=EntryType.TOOL_RESULT, tool_name="grep", content="no", is_error=True
        )
        await conv.add_entry(
            "alpha", "s1", type=EntryType.CONTEXT, content="README text", source="README.md"
        )
        await conv.add_entry("beta", "other", type=EntryType.MESSAGE, role=Role.USER, content="hi")
        await conv.compress("alpha", "s1", "fallback")
        for n in range(12):  # past max_active_exchanges: the oldest fold into qa_summary
            await conv.finalize_exchange("alpha", "s1", f"What is {n}?", f"It is {n}.")
        await conv.cache_put("alpha", "s1", "weather", {"city": "Oslo"}, {"t": 3}, 5)

        pad = c.knowledge.scratchpad
        await pad.write("flow-1", "User prefers metric units", user="ana", tenant="acme")
        note = await pad.write("flow-1", "Acme ships on Fridays", tenant="acme", salient=True)
        thought = await pad.write("flow-2", "temporary thought")
        await pad.promote(
            "flow-2", thought.snippet.id, PromotionTarget.PREFERENCES, user="ana", key="thought"
        )
        assert note.promotion is not None

        prefs = c.knowledge.preferences
        await prefs.update("ana", "units", "metric", flow_id="checkout")
        await prefs.record_playbook(
            "ana", "checkout", {"size": "M"}, [{"tool": "pay", "args": {}}], "paid", "buy a shirt"
        )
        body = "\n\n".join(f"Section {n}. " + "Acme policy text. " * 40 for n in range(4))
        await c.knowledge.business.ingest("acme", "handbook.md", body)


async def truth(memories: MemoryService) -> None:
    """Issue 32's fields: a superseded memory, tags, a pin, and history (update and learn)."""
    old = await memories.append("alpha", Layer.EPISODIC, "We deploy to Fly.io", tags=["deploy"])
    new = await memories.append(
        "alpha",
        Layer.EPISODIC,
        "We moved the deploys to AWS",
        tags=["deploy", "infra"],
        supersedes=[old.outcome.memory.id],
    )
    service = TruthService(memories)
    await service.update("alpha", new.outcome.memory.id, content="We deploy to AWS eu-west-1")
    await service.pin("alpha", [new.outcome.memory.id])
    await memories.learn("alpha", "user.editor", "Zed")  # the key held Helix: a version


def run(
    env: dict[str, str], *argv: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(memstrata_exe()), *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def cli(env: dict[str, str], *argv: str, stdin: str | None = None) -> dict[str, Any]:
    done = run(env, *argv, "--json", stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def env_for(store: str, tmp_path: Path) -> dict[str, str]:
    """The CLI's environment for a store: a postgresql:// URL, or a SQLite file's path."""
    if store.startswith("postgres"):
        env = server_env(tmp_path / "unused.db")
        env["MEMSTRATA_DATABASE_URL"] = store
    else:
        env = server_env(Path(store))
    env["MEMSTRATA_EMBEDDING_MODEL"] = "none"
    env["MEMSTRATA_LOG_LEVEL"] = "WARNING"
    if "MEMSTRATA_TEST_DATABASE_URL" in os.environ:
        env["MEMSTRATA_TEST_DATABASE_URL"] = os.environ["MEMSTRATA_TEST_DATABASE_URL"]
    return env


def body(path: Path) -> list[str]:
    """An export's records (its header carries the export time)."""
    return path.read_text(encoding="utf-8").splitlines()[1:]


@pytest.mark.parametrize("seeded_on", ["sqlite", "postgres"])
async def test_every_store_round_trips_across_backends(
    settings: Settings, pg_url: str, tmp_path: Path, seeded_on: str
) -> None:
    first_sqlite = str(tmp_path / "first.db")
    second_sqlite = str(tmp_path / "second.db")
    if seeded_on == "sqlite":
        await seed(settings.model_copy(update={"db": Path(first_sqlite)}))
        hops = [first_sqlite, pg_url, second_sqlite]
    else:
        await seed(settings.model_copy(update={"database_url": pg_url}))
        hops = [pg_url, first_sqlite, second_sqlite]

    exports: list[Path] = []
    for n, store in enumerate(hops):
        env = env_for(store, tmp_path)
        if n > 0:
            counts = cli(env, "import", str(exports[-1]), "--batch", "7")
            kinds = {kind: c["imported"] for kind, c in counts["stores"].items()}
            assert kinds == {k: len(v) for k, v in by_kind(exports[-1]).items()}
            assert all(
                c["skipped"] == 0 and c["renumbered"] == 0 for c in counts["stores"].values()
            )
        target = tmp_path / f"hop{n}.jsonl"
        report = cli(env, "export", str(target))
        assert report["stores"] == {k: len(v) for k, v in by_kind(target).items()} | {
            k: 0 for k in report["stores"] if k not in by_kind(target)
        }
        exports.append(target)

    first = by_kind(exports[0])
    assert {k: len(first.get(k, [])) >= n for k, n in EVERY_KIND.items()} == dict.fromkeys(
        EVERY_KIND, True
    )
    # The features' own fields came along: a summary, a fold, a promotion, vectors.
    assert any(json.loads(r)["compressed"] for r in first["conversation_entry"])
    assert any(json.loads(r)["qa_summary"] for r in first["conversation_session"])
    assert any(json.loads(r)["promoted_to"] for r in first["scratchpad_snippet"])
    assert all(json.loads(r)["embedding"] for r in first["document_chunk"])
    memories = [json.loads(r) for r in first["memory"]]
    assert any(m.get("pinned") for m in memories) and any(m.get("tags") for m in memories)
    assert any(m.get("superseded_by") for m in memories)
    assert {json.loads(r)["change"] for r in first["memory_version"]} == {"update", "learn"}
    for later in exports[1:]:
        assert body(later) == body(exports[0])

    # The last copy is a working store: its counters and ids continue after the imported ones.
    final = settings.model_copy(update={"db": Path(second_sqlite)})
    async with open_container(final, FrozenClock()) as c:
        added = await c.conversations.add_entry(
            "alpha", "s1", type=EntryType.MESSAGE, role=Role.USER, content="after the move"
        )
        entries = [json.loads(r) for r in first["conversation_entry"]]
        assert added.entry.id > max(e["entry_no"] for e in entries if e["session_id"] == "s1")
        found = await c.knowledge.business.search("acme", "policy")
        assert found.hits


async def seeded_export(settings: Settings, tmp_path: Path) -> Path:
    """tmp_path/all.jsonl: the export of a SQLite store seeded with every kind of row."""
    source = tmp_path / "source.db"
    await seed(settings.model_copy(update={"db": source}))
    cli(env_for(str(source), tmp_path), "export", str(tmp_path / "all.jsonl"))
    return tmp_path / "all.jsonl"


def by_kind(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in body(path):
        out.setdefault(json.loads(line)["kind"], []).append(line)
    return out


async def test_a_second_import_skips_every_stored_row_and_a_partial_store_is_completed(
    settings: Settings, tmp_path: Path
) -> None:
    source = tmp_path / "source.db"
    await seed(settings.model_copy(update={"db": source}))
    env = env_for(str(source), tmp_path)
    cli(env, "export", str(tmp_path / "all.jsonl"))
    lines = (tmp_path / "all.jsonl").read_text().splitlines()

    target = env_for(str(tmp_path / "target.db"), tmp_path)
    # Half the file first (as if an import had died after some batches), then all of it.
    half = [lines[0], *[line for line in lines[1:] if json.loads(line)["kind"] == "memory"]]
    cli(target, "import", "-", stdin="\n".join(half) + "\n")
    counts = cli(target, "import", str(tmp_path / "all.jsonl"))
    memories = len(half) - 1
    assert counts["stores"]["memory"] == {"imported": 0, "skipped": memories, "renumbered": 0}
    assert counts["stores"]["document_chunk"]["imported"] >= 3
    again = cli(target, "import", str(tmp_path / "all.jsonl"))
    for kind, c in again["stores"].items():
        if kind != "document_revision":  # a revision is raised, never refused
            assert c["imported"] == 0, kind
    cli(target, "export", str(tmp_path / "copy.jsonl"))
    copied = [json.loads(r) for r in body(tmp_path / "copy.jsonl")]
    original = [json.loads(r) for r in body(tmp_path / "all.jsonl")]
    strip = ("revision",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in copied] == [
        {k: v for k, v in r.items() if k not in strip} for r in original
    ]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_file_with_bad_lines_writes_nothing_to_any_store(
    settings: Settings, pg_url: str, tmp_path: Path, backend: str
) -> None:
    await seeded_export(settings, tmp_path)
    lines = (tmp_path / "all.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines[1:]]
    chunk = next(i for i, r in enumerate(records) if r["kind"] == "document_chunk")
    entry = next(i for i, r in enumerate(records) if r["kind"] == "conversation_entry")
    records[chunk]["embedding"] = "not base64!"
    records[entry]["content"] = "x\x00y"
    (tmp_path / "bad.jsonl").write_text(
        "\n".join([lines[0], *(json.dumps(r) for r in records)]) + "\n"
    )

    target = pg_url if backend == "postgres" else str(tmp_path / "target.db")
    env = env_for(target, tmp_path)
    done = run(env, "import", str(tmp_path / "bad.jsonl"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "2 bad lines, nothing imported" in done.stderr
    assert f"line {entry + 2}: content: must not contain NUL" in done.stderr
    assert f"line {chunk + 2}: embedding: must be base64" in done.stderr
    assert "SELECT" not in done.stderr and str(tmp_path) not in done.stderr
    report = cli(env, "export", str(tmp_path / "after.jsonl"))
    assert set(report["stores"].values()) == {0}


async def test_copy_store_moves_every_store_both_ways(
    settings: Settings, pg_url: str, tmp_path: Path
) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    await seed(settings.model_copy(update={"db": source}))
    env = env_for(str(source), tmp_path)
    there = cli(env, "copy-store", "--from", f"sqlite://{source}", "--to", pg_url, "--batch", "5")
    assert there["verified"] and there["embeddings"] == there["memories"] > 0
    assert {k for k, (n, _) in there["stores"].items() if n} == set(EVERY_KIND) - {"memory"}
    home = cli(env, "copy-store", "--from", pg_url, "--to", f"sqlite://{back}")
    assert home["verified"] and home["stores"] == there["stores"]

    exports = []
    for n, store in enumerate([str(source), pg_url, str(back)]):
        cli(env_for(store, tmp_path), "export", str(tmp_path / f"{n}.jsonl"))
        exports.append(body(tmp_path / f"{n}.jsonl"))
    assert exports[0] == exports[1] == exports[2]

    # One project: its memories and conversations only (the knowledge stores have no project).
    cli(env, "export", str(tmp_path / "beta.jsonl"), "--project", "beta")
    beta = [json.loads(r) for r in body(tmp_path / "beta.jsonl")]
    assert {r["kind"] for r in beta} == {"memory", "conversation_session", "conversation_entry"}
    assert {r["project"] for r in beta} == {"beta"}

    # A target holding rows of any store is refused, naming the store.
    fresh = tmp_path / "fresh.db"
    async with open_container(settings.model_copy(update={"db": fresh}), FrozenClock()) as c:
        await c.knowledge.preferences.update("ana", "units", "metric")
    done = run(env, "copy-store", "--from", f"sqlite://{source}", "--to", f"sqlite://{fresh}")
    assert done.returncode == 1 and "already holds 1 preference rows" in done.stderr


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_supersession_and_history_follow_renumbered_and_stored_memories(
    settings: Settings, pg_url: str, tmp_path: Path, backend: str
) -> None:
    await seeded_export(settings, tmp_path)

    # The target holds memories of its own under the file's ids, and the newer deploy fact
    # itself: the file's memories are renumbered, and its newer fact is skipped as stored.
    target = pg_url if backend == "postgres" else str(tmp_path / "target.db")
    there = settings.model_copy(
        update={"database_url": pg_url} if backend == "postgres" else {"db": Path(target)}
    )
    async with open_container(there, FrozenClock()) as c:
        for n in range(12):
            await c.memories.append("gamma", Layer.EPISODIC, f"Filler fact number {n}")
        stored = await c.memories.append("alpha", Layer.EPISODIC, "We deploy to AWS eu-west-1")
    env = env_for(target, tmp_path)
    counts = cli(env, "import", str(tmp_path / "all.jsonl"))
    assert counts["stores"]["memory"]["renumbered"] > 0
    assert counts["stores"]["memory"]["skipped"] == 1

    cli(env, "export", str(tmp_path / "after.jsonl"))
    after = by_kind(tmp_path / "after.jsonl")
    memories = {m["id"]: m for m in map(json.loads, after["memory"])}
    by_content = {m["content"]: m for m in memories.values()}
    old = by_content["We deploy to Fly.io"]
    assert old["superseded_by"] == stored.outcome.memory.id
    # History follows its memory: the update's version to the stored fact, learn's to the key.
    versions = {v["content"]: v for v in map(json.loads, after["memory_version"])}
    assert versions["We moved the deploys to AWS"]["memory_id"] == stored.outcome.memory.id
    editor = next(m for m in memories.values() if m.get("key") == "user.editor")
    assert versions["Helix"]["memory_id"] == editor["id"]
    # A second import adds nothing, versions included.
    again = cli(env, "import", str(tmp_path / "all.jsonl"))
    assert again["stores"]["memory_version"]["imported"] == 0


def test_values_past_the_columns_are_refused_by_line_and_field(tmp_path: Path) -> None:
    # Issue 34.5: these went as far as the driver (an overflow) and printed a traceback.
    header = {
        "format": "memstrata-export",
        "format_version": 2,
        "schema_version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
    }
    memory = {
        "kind": "memory",
        "id": 1,
        "project": "p",
        "layer": "episodic",
        "key": None,
        "content": "x",
        "metadata": {},
        "session_id": None,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "last_accessed": None,
        "access_count": 0,
        "memory_tier": "ACTIVE",
        "content_hash": "h",
        "token_count": 1,
    }
    bad = [
        {**memory, "token_count": 2**70},
        {**memory, "id": 2, "created_at": "9999-12-31T23:59:59-23:59"},
        {**memory, "id": 3, "updated_at": "0001-01-01T00:00:00+23:59"},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [header, *bad]) + "\n")
    done = run(env_for(str(tmp_path / "m.db"), tmp_path), "import", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "3 bad lines, nothing imported" in done.stderr
    for text in ("line 2: token_count:", "line 3: created_at:", "line 4: updated_at:"):
        assert text in done.stderr, done.stderr
