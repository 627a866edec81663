"""The wheel ships what an installed memstrata needs: migrations, tokenizer data, the script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("memstrata-*.whl")
    return built


def test_the_wheel_holds_migrations_tokenizer_and_console_script(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = zf.read(entry_points).decode()
    shipped_sql = sorted(
        n.rsplit("/", 1)[1] for n in names if n.startswith("memory_core/storage/sqlite/sql/")
    )
    assert shipped_sql == sorted(p.name for p in (ROOT / "migrations" / "sqlite").glob("*.sql"))
    data = "memory_core/embeddings/data/all-MiniLM-L6-v2/"
    assert {data + "tokenizer.json", data + "NOTICE"} <= names
    # The dashboard's templates and its one stylesheet (no CDN: the pages work offline).
    dashboard = "server/http/dashboard/"
    templates = {
        dashboard + "templates/" + p.name
        for p in (ROOT / "server" / "http" / "dashboard" / "templates").glob("*.html")
    }
    assert templates and templates | {dashboard + "static/dashboard.css"} <= names
    assert "memstrata = server.cli:main" in scripts  # hooks dispatch before server.cli.commands
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]


def test_code_from_the_wheel_finds_its_packaged_data(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(unpacked)
    # The wheel's own copies of server/ and memory_core/ come first on sys.path, ahead of the
    # editable checkout, exactly as in a pipx/uvx environment.
    probe = f"""
import json, sys
sys.path.insert(0, {str(unpacked)!r})
import memory_core
from memory_core.storage.migrations import load_migrations
from memory_core.storage.sqlite.migrate import default_migrations_dir
from memory_core.embeddings.minilm_onnx import TOKENIZER_PATH
print(json.dumps({{
    "package": memory_core.__file__,
    "migrations": str(default_migrations_dir()),
    "count": len(load_migrations(default_migrations_dir())),
    "tokenizer": str(TOKENIZER_PATH),
    "tokenizer_exists": TOKENIZER_PATH.is_file(),
}}))
from server.cli.commands import main
main(["doctor", "--json"])
"""
    env = {
        **os.environ,
        "MEMSTRATA_DB": str(tmp_path / "memory.db"),
        "MEMSTRATA_LOG_LEVEL": "WARNING",
    }
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    first, _, rest = done.stdout.partition("\n")
    found = json.loads(first)
    assert found["package"].startswith(str(unpacked))
    assert found["migrations"] == str(unpacked / "memory_core" / "storage" / "sqlite" / "sql")
    assert found["count"] == len(list((ROOT / "migrations" / "sqlite").glob("*.sql")))
    assert found["tokenizer"].startswith(str(unpacked)) and found["tokenizer_exists"]
    doctor = json.loads(rest)
    assert done.returncode == 0, doctor
    statuses = {c["name"]: c["status"] for c in doctor["checks"]}
    assert statuses["tokenizer"] == "ok" and statuses["embedding model"] == "ok"
