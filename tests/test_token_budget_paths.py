"""Every `token_budget` is spent through the one counter (memory_core/domain/tokens.py).

Two nets. On the source (read with `ast`, nothing imported; each rule also run on planted code
to show it catches what it is meant to): no module estimates tokens from a length itself, no
budget-path module imports the WordPiece instrument, and no budget value is compared or
subtracted by hand (only `TokenAllowance` spends one). On behaviour: with the counter replaced by
one that prices every text at 10,000 tokens, each budget path (search, load_context, the
conversation context, the session-start context, the prompt hook) keeps nothing; a path that
counted any other way would keep something.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest

import memory_core.domain.budget as budget_module
from memory_core.config.hooks import HookPolicy
from memory_core.config.policies import ConversationPolicy, Limits, RankingPolicy, TierPolicy
from memory_core.domain.conversation import EntryType, Role
from memory_core.domain.match import Match
from memory_core.domain.models import Layer, SearchMode
from memory_core.services.conversations import ConversationService
from memory_core.services.memories import MemoryService, SearchRequest
from memory_core.services.session_start import ScreenContext, SessionStartService
from server.hooks.events import _select
from tests.backends import SqliteUnderTest
from tests.fakes import FrozenClock, make_hit, make_memory

ROOT = Path(__file__).resolve().parents[1]
COUNTER = Path("memory_core/domain/tokens.py")
# The tokenizer embeds (memory_core/embeddings/), measures what texts cost (`memstrata tools`)
# and is checked for by `doctor`; it never cuts an answer.
INSTRUMENT_USERS = {Path("server/cli/tools.py"), Path("server/cli/doctor.py")}
EMBEDDINGS = Path("memory_core/embeddings")
# Names that hold a token budget: the tool parameter and the hook settings that feed one.
BUDGETS = {"token_budget", "prompt_tokens", "start_tokens", "playbook_tokens"}


def _sources(root: Path) -> Iterator[tuple[Path, ast.Module]]:
    for package in ("memory_core", "server"):
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root), ast.parse(path.read_text(encoding="utf-8"))


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def own_estimates(root: Path) -> list[str]:
    """`len(x) / 4`-style token estimates outside the counter module."""
    return [
        f"{rel}:{node.lineno}"
        for rel, tree in _sources(root)
        if rel != COUNTER
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div | ast.FloorDiv)
        and isinstance(node.left, ast.Call)
        and _name(node.left.func) == "len"
        and isinstance(node.right, ast.Constant)
        and node.right.value in (3, 3.5, 4, 4.0)
    ]


def instrument_imports(root: Path) -> list[str]:
    """Imports of the tokenizer or the WordPiece counter by a module that may cut an answer."""
    found = []
    for rel, tree in _sources(root):
        if rel in INSTRUMENT_USERS or rel.parent == EMBEDDINGS:
            continue
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] == "tokenizers" or n.endswith(".wordpiece") for n in names):
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}")
    return found


def hand_spent_budgets(root: Path) -> list[str]:
    """A budget used in arithmetic, or compared with anything but a constant (validation)."""
    found = []
    for rel, tree in _sources(root):
        for node in ast.walk(tree):
            operands: list[ast.expr] = []
            if isinstance(node, ast.BinOp):
                operands = [node.left, node.right]
            elif isinstance(node, ast.AugAssign):
                operands = [node.target, node.value]
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if all(isinstance(s, ast.Constant) or _name(s) in BUDGETS for s in sides):
                    continue  # `token_budget < 1`, `token_budget is None`: validation
                operands = sides
            if any(_name(o) in BUDGETS for o in operands):
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}")
    return found


@pytest.mark.parametrize("rule", [own_estimates, instrument_imports, hand_spent_budgets])
def test_every_budget_path_keeps_to_the_one_counter(rule: Callable[[Path], list[str]]) -> None:
    """No own estimate, no tokenizer on a budget path, no budget spent by hand."""
    assert rule(ROOT) == []


def test_the_source_rules_catch_planted_bypasses(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    (tmp_path / "memory_core").mkdir()
    (tmp_path / "server" / "bad.py").write_text(
        "from tokenizers import Tokenizer\n"
        "from memory_core.embeddings.wordpiece import WordPieceTokenCounter\n"
        "def f(line, token_budget, policy):\n"
        "    cost = len(line) // 4\n"
        "    if cost > token_budget:\n"
        "        return policy.prompt_tokens - cost\n"
        "    if token_budget is not None and token_budget < 1:\n"  # validation: allowed
        "        raise ValueError\n",
        encoding="utf-8",
    )
    assert own_estimates(tmp_path) == ["server/bad.py:4"]
    assert instrument_imports(tmp_path) == ["server/bad.py:1", "server/bad.py:2"]
    assert hand_spent_budgets(tmp_path) == ["server/bad.py:5", "server/bad.py:6"]


# --- behaviour: every path spends through TokenAllowance, which counts with count_tokens ----------

P = "shop"


@pytest.fixture
def priced_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text costs 10,000 tokens: within a smaller budget nothing fits."""
    monkeypatch.setattr(budget_module, "count_tokens", lambda text: 10_000)


@pytest.fixture
def store(db: aiosqlite.Connection) -> SqliteUnderTest:
    return SqliteUnderTest(db)


async def test_memory_budgets_go_through_the_counter(
    store: SqliteUnderTest, clock: FrozenClock, priced_out: None
) -> None:
    memories = MemoryService(
        repo=store.repo(),
        clock=clock,
        limits=Limits(),
        tiers=TierPolicy(),
        ranking=RankingPolicy(),
    )
    await memories.append(P, Layer.EPISODIC, "deployed the release to staging")
    await memories.append(P, Layer.EPISODIC, "the release notes mention staging")
    found = await memories.search(
        SearchRequest(project=P, query="release", mode=SearchMode.KEYWORD, token_budget=9_999)
    )
    assert found.hits == [] and found.omitted == 2
    unbudgeted = await memories.search(
        SearchRequest(project=P, query="release", mode=SearchMode.KEYWORD)
    )
    assert len(unbudgeted.hits) == 2  # the filter above is the budget, not the query
    loaded = await memories.load_context(P, token_budget=9_999)
    assert loaded.omitted == 2 and not loaded.items


async def test_the_conversation_context_goes_through_the_counter(
    store: SqliteUnderTest, clock: FrozenClock, priced_out: None
) -> None:
    conversations = ConversationService(
        store=store.conversations(), clock=clock, policy=ConversationPolicy()
    )
    await conversations.start(P, "s")
    for text in ("hello", "how do I deploy?"):
        await conversations.add_entry(P, "s", type=EntryType.MESSAGE, content=text, role=Role.USER)
    context = await conversations.context(P, "s", token_budget=9_999)
    assert context.entries == [] and context.omitted_entries == 2


async def test_the_session_start_goes_through_the_counter(
    store: SqliteUnderTest, clock: FrozenClock, priced_out: None
) -> None:
    memories = MemoryService(
        repo=store.repo(), clock=clock, limits=Limits(), tiers=TierPolicy(), ranking=RankingPolicy()
    )
    await memories.append(P, Layer.PROCEDURAL, "run make lint first", key="before committing")
    start = SessionStartService(repo=store.repo(), clock=clock, tiers=TierPolicy())
    built = await start.build(P, screen=ScreenContext(cwd="/srv/shop"), token_budget=9_999)
    assert built.memory_ids == () and built.omitted >= 1


def test_the_prompt_hook_goes_through_the_counter(priced_out: None) -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    strong = [make_hit(make_memory(i, when), rank=i, match=Match.STRONG) for i in (1, 2)]
    chosen, lines = _select(strong, set(), "s", "prompt", HookPolicy(prompt_tokens=2_500))
    assert chosen == [] and lines == []
