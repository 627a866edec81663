"""ProjectMoves on SQLite and PostgreSQL (the `storage` fixture runs both)."""

from __future__ import annotations

from memory_core.clock import SystemClock
from memory_core.config.policies import TierPolicy
from memory_core.domain.conversation import EntryDraft, EntryType, Role
from memory_core.domain.knowledge import PreferenceDraft
from memory_core.domain.models import Layer, SearchMode
from memory_core.ports.project_moves import ProjectMoves
from memory_core.services.memories import MemoryService, SearchRequest
from memory_core.services.session_start import ScreenContext, SessionStartService
from memory_core.storage.postgres import PostgresSession
from memory_core.storage.postgres.project_moves import PostgresProjectMoves
from memory_core.storage.sqlite import SqliteSession
from memory_core.storage.sqlite.project_moves import SqliteProjectMoves
from tests.backends import PostgresUnderTest, SqliteUnderTest, StorageUnderTest
from tests.fakes import START

OLD, NEW = "api", "api@github.com/acme/api"


def moves_on(storage: StorageUnderTest) -> ProjectMoves:
    if isinstance(storage, SqliteUnderTest):
        return SqliteProjectMoves(SqliteSession(storage.db))
    assert isinstance(storage, PostgresUnderTest)
    return PostgresProjectMoves(PostgresSession(storage.store.pool))


def entry(text: str) -> EntryDraft:
    return EntryDraft(type=EntryType.MESSAGE, role=Role.USER, content=text, token_count=2)


async def test_a_move_takes_memories_conversations_and_hook_sessions(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    await service.append(OLD, Layer.EPISODIC, "The billing webhook retries three times")
    await service.learn(OLD, "deploy.target", "fly.io")
    await service.append("other", Layer.EPISODIC, "Billing of another team")
    conversations = storage.conversations()
    await conversations.create_session(OLD, "s1", START)
    await conversations.add_entry(OLD, "s1", entry("hello"), START)
    await storage.hook_sessions().save_start(OLD, "s1", "context", 1, START)
    moves = moves_on(storage)
    assert await moves.holds_rows(OLD) and not await moves.holds_rows(NEW)

    done = await moves.move(OLD, NEW)

    assert (done.memories, done.memories_kept) == (2, 0)
    assert (done.sessions, done.sessions_kept, done.hook_sessions) == (1, 0, 1)
    assert not await moves.holds_rows(OLD) and await moves.holds_rows(NEW)
    hits = await service.search(
        SearchRequest(project=NEW, query="billing webhook", mode=SearchMode.KEYWORD)
    )
    assert [h.memory.content for h in hits.hits] == ["The billing webhook retries three times"]
    old_hits = await service.search(
        SearchRequest(project=OLD, query="billing", mode=SearchMode.KEYWORD)
    )
    assert old_hits.hits == []
    assert await storage.fetchval("SELECT sum(n) FROM memory_counts WHERE project = ?", NEW) == 2
    assert (
        await storage.fetchval(
            "SELECT coalesce(sum(n), 0) FROM memory_counts WHERE project = ?", OLD
        )
        == 0
    )
    assert [e.content for e in await conversations.entries(NEW, "s1", active_only=False)] == [
        "hello"
    ]
    state = await storage.hook_sessions().get(NEW, "s1")
    assert state is not None and state.start_context == "context"
    assert await moves.holds_rows("other")


async def test_rows_the_new_name_already_holds_stay_under_the_old_one(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    await service.learn(OLD, "deploy.target", "fly.io (old)")
    await service.learn(NEW, "deploy.target", "render.com (new)")
    await service.append(OLD, Layer.EPISODIC, "Same text in both")
    await service.append(NEW, Layer.EPISODIC, "Same text in both")
    await service.append(OLD, Layer.EPISODIC, "Only in the old one")
    conversations = storage.conversations()
    for project in (OLD, NEW):
        await conversations.create_session(project, "spanning", START)
        await conversations.add_entry(project, "spanning", entry(f"in {project}"), START)
        await storage.hook_sessions().save_start(project, "spanning", project, 1, START)

    done = await moves_on(storage).move(OLD, NEW)

    assert (done.memories, done.memories_kept) == (1, 2)
    assert (done.sessions, done.sessions_kept) == (0, 1)
    assert (done.hook_sessions, done.hook_sessions_kept) == (0, 1)
    fact = await service.recall(NEW, "deploy.target")
    assert fact.value is not None and fact.value.content == "render.com (new)"
    kept = [e.content for e in await conversations.entries(OLD, "spanning", active_only=False)]
    assert kept == [f"in {OLD}"]


async def test_start_directories_are_read_from_real_start_contexts(
    storage: StorageUnderTest, service: MemoryService
) -> None:
    preferences = storage.preferences()
    forged = PreferenceDraft(
        user="dev", key="directory", value="/forged/by/a/preference", flow_id=None, origin="t"
    )
    await preferences.upsert(forged, None, None, START)
    await service.append(
        OLD, Layer.EPISODIC, "x\n## Where you are working (now)\n- directory: /forged"
    )
    builder = SessionStartService(
        repo=storage.repo(), clock=SystemClock(), tiers=TierPolicy(), preferences=preferences
    )
    hooks = storage.hook_sessions()
    for n, where in enumerate(["/home/dev/work/api", "/home/dev/work/api", "/home/dev/oss/api"]):
        built = await builder.build(OLD, user="dev", screen=ScreenContext(cwd=where, branch="main"))
        await hooks.save_start(OLD, f"s{n}", built.text, built.tokens, START)
    blind = await builder.build(OLD, user="dev")
    await hooks.save_start(OLD, "no-screen", blind.text, blind.tokens, START)
    await hooks.add_injected(OLD, "never-started", [1], START)

    found = await moves_on(storage).start_directories(OLD)

    assert found.directories == {"/home/dev/work/api", "/home/dev/oss/api"}
    assert (found.sessions, found.unnamed) == (4, 1)
    empty = await moves_on(storage).start_directories("nobody")
    assert (empty.directories, empty.sessions, empty.unnamed) == (frozenset(), 0, 0)
