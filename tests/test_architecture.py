"""The layout's facts, checked on the source: the module map, no import circles, one definition.

Each check reads the code with `ast` (nothing is imported), and each is also run on a planted
tree under tmp_path to show it catches what it is meant to catch.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("server", "memory_core")
MAP = ROOT / "docs" / "architecture.md"

# A class, or a module-level alias named like a type (`Vector = ...`, `_Frozen = ...`).
_TYPE_NAME = re.compile(r"_?[A-Z][a-z0-9]\w*")


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the project packages under `root`."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, here: str, known: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:  # relative: resolve against the package the module is in
        is_package = known[here].name == "__init__.py"
        package = here.split(".")[: len(here.split(".")) - node.level + is_package]
        base = ".".join([*package, base] if base else package)
    # `from a import b` imports module a.b when there is one, else a name of module a.
    return {
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
    }


def import_graph(root: Path) -> dict[str, set[str]]:
    """Every project module -> the project modules it imports anywhere (functions included)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets |= _imported(node, name, known)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports, each sorted."""
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {
        tuple(sorted({node} | {other for other in reach[node] if node in reach[other]}))
        for node in graph
        if node in reach[node]
    }
    return [list(group) for group in sorted(groups)]


def _top_level(body: list[ast.stmt]) -> list[tuple[str, int]]:
    """(name, line) of classes and type-like aliases at module level (inside `if` blocks too)."""
    names: list[tuple[str, int]] = []
    for node in body:
        if isinstance(node, ast.If):
            names += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.ClassDef):
            names.append((node.name, node.lineno))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [
                (t.id, node.lineno)
                for t in targets
                if isinstance(t, ast.Name) and _TYPE_NAME.fullmatch(t.id)
            ]
    return names


def defined_twice(root: Path) -> dict[str, list[str]]:
    """Type names defined in more than one module -> where (file:line)."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in modules(root).values():
        for name, line in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
            where[name].append(f"{path.relative_to(root)}:{line}")
    return {name: places for name, places in where.items() if len(places) > 1}


def mapped(doc: Path) -> set[str]:
    """The modules the ```modules block of the map lists, as paths like `server/app.py`."""
    block = re.search(r"^```modules\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S)
    assert block is not None, f"{doc} has no ```modules block"
    listed: set[str] = set()
    for line in block.group(1).splitlines():
        folder, *names = line.split()
        listed |= {f"{folder}{name}.py" for name in names}
    return listed


def on_disk(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in modules(root).values()}


# The checks on this repository.


def test_every_module_is_on_the_map_and_the_map_names_only_real_modules() -> None:
    listed, present = mapped(MAP), on_disk(ROOT)
    assert sorted(present - listed) == [], "add these to the map in docs/architecture.md"
    assert sorted(listed - present) == [], "the map in docs/architecture.md names missing files"


def test_no_project_module_imports_another_in_a_circle() -> None:
    assert cycles(import_graph(ROOT)) == []


def test_no_class_or_type_alias_is_defined_twice() -> None:
    assert defined_twice(ROOT) == {}


# The same checks on planted trees: each one fails when it should.


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            "server/__init__.py": "",
            "server/a.py": "from server.b import run\n",
            "server/b.py": "def run():\n    from server import c\n",
            "server/c.py": "import server.a\n",
            "memory_core/__init__.py": "",
            "memory_core/d.py": "from memory_core import e\n",
            "memory_core/e.py": "",
        },
    )
    assert cycles(import_graph(tmp_path)) == [["server.a", "server.b", "server.c"]]


def test_a_type_defined_in_two_modules_is_found_but_an_import_is_not(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            "server/__init__.py": "from server.a import Vector\n",
            "server/a.py": "Vector = list[float]\nlimit = 3\n",
            "memory_core/__init__.py": "",
            "memory_core/b.py": "if True:\n    Vector = tuple[float]\nclass _Frozen:\n    pass\n",
            "memory_core/c.py": "class _Frozen:\n    pass\n",
        },
    )
    assert defined_twice(tmp_path) == {
        "Vector": ["server/a.py:1", "memory_core/b.py:2"],
        "_Frozen": ["memory_core/b.py:3", "memory_core/c.py:1"],
    }


def test_a_module_missing_from_the_map_is_found(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            "server/__init__.py": "",
            "server/app.py": "",
            "server/cli_new.py": "",
            "docs/architecture.md": "# map\n\n```modules\nserver/  __init__ app gone\n```\n",
        },
    )
    listed, present = mapped(tmp_path / "docs/architecture.md"), on_disk(tmp_path)
    assert present - listed == {"server/cli_new.py"}
    assert listed - present == {"server/gone.py"}


def test_property_tests_have_no_wall_clock_deadline() -> None:
    """A busy machine took 485 ms for one Hypothesis example; the suite must not fail for that."""
    from hypothesis import settings

    assert settings.default is not None and settings.default.deadline is None
    own = re.compile(r"\bdeadline=(?!None)")
    for path in Path(__file__).parent.rglob("test_*.py"):
        if path != Path(__file__):
            assert not own.search(path.read_text(encoding="utf-8")), path
