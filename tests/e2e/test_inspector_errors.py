"""Errors, resources and prompts as the MCP Inspector CLI (an independent client) shows them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import memstrata_exe
from tests.e2e.test_inspector import INSPECTOR_PROJECT, Inspector, inspector_path

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    return Inspector(tmp_path_factory.mktemp("inspector-errors") / "memory.db")


def _text(result: dict[str, object]) -> str:
    content = result["content"]
    assert isinstance(content, list)
    return " ".join(str(block.get("text", "")) for block in content)


def test_a_misspelt_argument_is_refused_with_the_valid_names(inspector: Inspector) -> None:
    result = inspector.run("tools/call", "search", query="x", limt="1")
    assert result["isError"] is True
    text = _text(result)
    assert "Unknown argument `limt` (did you mean `limit`?)" in text and "It takes: query" in text


def test_a_schema_error_reads_like_the_servers_own(inspector: Inspector) -> None:
    result = inspector.run("tools/call", "search", query="x", limit=1000)
    assert result["isError"] is True
    text = _text(result)
    assert "Invalid `limit`: must be at most 100 (got 1000)" in text
    assert "pydantic" not in text and "validation error" not in text


def test_the_default_projects_resources_are_listed(inspector: Inspector) -> None:
    listed = inspector.run("resources/list")["resources"]
    uris = [r["uri"] for r in listed]
    assert uris == [f"memory://{INSPECTOR_PROJECT}/stats", f"memory://{INSPECTOR_PROJECT}/context"]


def test_prompt_arguments_are_described(inspector: Inspector) -> None:
    prompts = inspector.run("prompts/list")["prompts"]
    for prompt in prompts:
        assert all(arg.get("description") for arg in prompt["arguments"]), prompt


def test_a_prompt_without_its_argument_is_invalid_params(tmp_path: Path) -> None:
    exe = inspector_path()
    if not exe.exists():
        pytest.fail(f"MCP Inspector CLI not found at {exe}: run `make inspector`")
    done = subprocess.run(
        [
            str(exe),
            "--cli",
            "-e",
            f"MEMSTRATA_DB={tmp_path / 'memory.db'}",
            str(memstrata_exe()),
            "serve",
            "--method",
            "prompts/get",
            "--prompt-name",
            "start_task_with_memory",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "-32602" in output and "missing `task` (required)" in output
