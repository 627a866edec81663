"""Credentials never reach the file, through the real server (stdio) and the real CLI.

Every way text gets in is driven as a client drives it: tools over stdio (scratchpad,
preferences, playbooks, documents, agent.md, conversation entries, import_session, learn),
`memstrata ingest` on a folder and `memstrata import` of an export file. Then the database
file's bytes (and its WAL) are searched for every secret.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import PROJECT, error_text, memstrata_exe, ok, server_env, stdio_server

pytestmark = pytest.mark.e2e

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_ID_2 = "AKIAI44QH8DHBEXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2" * 9
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
SLASH_PASSWORD = "p@ss/w0rd"
PLAIN = "s3cr3tPlainWords"
SECRETS = (AWS_ID, AWS_ID_2, AWS_SECRET, GITHUB, STRIPE, SLASH_PASSWORD, PLAIN, "hunter2xyz")


def _cli(db: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**server_env(db), "MEMSTRATA_EMBEDDING_MODEL": "none"}
    return subprocess.run(
        [str(memstrata_exe()), *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _assert_file_clean(db: Path) -> None:
    files = sorted(db.parent.glob(db.name + "*"))
    assert files, "no database file"
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret!r} stored in {path.name}"


async def test_no_credential_reaches_the_file_through_any_way_in(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        stored = ok(
            await client.call_tool(
                "append",
                {
                    "layer": "episodic",
                    "content": f"sts said {AWS_ID}",
                    "metadata": {"aws_secret_access_key": PLAIN, f"k {GITHUB}": 1},
                },
            )
        )
        assert stored["redacted"] == {"aws_access_key": 1, "github_token": 1, "secret_value": 1}
        first = ok(await client.call_tool("learn", {"key": f"acct {AWS_ID}", "value": "one"}))
        second = ok(await client.call_tool("learn", {"key": f"acct {AWS_ID_2}", "value": "two"}))
        assert first["id"] != second["id"], "two secrets as keys must stay two facts"
        assert "aws_access_key" in str(first["redacted"])
        snippet = ok(
            await client.call_tool(
                "scratchpad_write", {"session_id": "s", "snippet": "PASSWORD=hunter2xyz"}
            )
        )
        assert snippet["redacted"] == {"password": 1}
        rule = ok(
            await client.call_tool(
                "preferences_update", {"user": "u", "key": "ci", "value": f"use {GITHUB}"}
            )
        )
        assert rule["redacted"] == {"github_token": 1}
        book = ok(
            await client.call_tool(
                "playbook_record",
                {
                    "user": "u",
                    "flow": "pay",
                    "slots": {"password": "hunter2xyz"},
                    "tool_calls": [{"key": STRIPE}],
                    "outcome": "paid",
                    "user_query": "pay the invoice",
                },
            )
        )
        assert book["redacted"] == {"password": 1, "stripe_key": 1}
        doc = ok(
            await client.call_tool(
                "ingest_document",
                {"tenant": "t", "source": "aws.json", "text": f'"SecretAccessKey": "{AWS_SECRET}"'},
            )
        )
        assert doc["redacted"] == {"aws_secret_key": 1}
        seeded = ok(
            await client.call_tool(
                "seed_tenant_from_agent_md", {"tenant": "t", "text": f"# Pay\nKey {STRIPE}\n"}
            )
        )
        assert seeded["redacted"] == {"stripe_key": 1}
        ok(await client.call_tool("start_session", {"session_id": "c"}))
        entry = ok(
            await client.call_tool(
                "add_session_entry",
                {
                    "session_id": "c",
                    "type": "context",
                    "content": "read the remote",
                    "source": f"https://ci:{SLASH_PASSWORD}@git.example/r",
                },
            )
        )
        assert entry["redacted"] == {"url_password": 1}
        exported = ok(await client.call_tool("export_session", {"session_id": "c"}))
        exported["entries"][0]["content"] = f"with {GITHUB}"
        imported = ok(
            await client.call_tool("import_session", {"data": exported, "session_id": "c2"})
        )
        assert imported["redacted"] == {"github_token": 1}

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "creds.md").write_text(f"aws_secret_access_key = {AWS_SECRET}\n", encoding="utf-8")
    ingested = _cli(db_path, "ingest", str(folder), "--tenant", "t2", "--json")
    assert ingested.returncode == 0, ingested.stderr

    export = [
        {
            "format": "memstrata-export",
            "format_version": 1,
            "schema_version": 1,
            "exported_at": "2026-01-01T00:00:00+00:00",
        },
        {
            "id": 900,
            "project": PROJECT,
            "layer": "semantic",
            "key": f"imported {AWS_ID_2}",
            "content": f"token {GITHUB}",
            "metadata": {"password": "hunter2xyz"},
            "session_id": None,
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:00:00+00:00",
            "last_accessed": None,
            "access_count": 0,
            "memory_tier": "ACTIVE",
            "content_hash": "x",
            "token_count": 2,
        },
    ]
    lines = "".join(json.dumps(line) + "\n" for line in export)
    done = _cli(db_path, "import", "-", "--json", stdin=lines)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["imported"] == 1
    assert counts["redacted"] == {"aws_access_key": 1, "github_token": 1, "password": 1}

    _assert_file_clean(db_path)


async def test_import_session_applies_the_entry_limits(db_path: Path, tmp_path: Path):
    async with stdio_server(db_path, tmp_path / "stderr.log") as client:
        ok(await client.call_tool("start_session", {"session_id": "c"}))
        for text in ("one", "two"):
            ok(
                await client.call_tool(
                    "add_session_entry",
                    {"session_id": "c", "type": "message", "role": "user", "content": text},
                )
            )
        exported = ok(await client.call_tool("export_session", {"session_id": "c"}))

        with_nul = json.loads(json.dumps(exported))
        with_nul["entries"][1]["content"] = "bad\x00byte"
        message = error_text(
            await client.call_tool("import_session", {"data": with_nul, "session_id": "n1"})
        )
        assert "data.entries[1].content" in message and "NUL" in message

        huge = json.loads(json.dumps(exported))
        huge["entries"][0]["content"] = "x" * 1_000_000
        message = error_text(
            await client.call_tool("import_session", {"data": huge, "session_id": "n2"})
        )
        assert "data.entries[0].content" in message and "at most" in message

        long_source = json.loads(json.dumps(exported))
        long_source["exchanges"] = [
            {
                "id": 1,
                "question": "q\x00",
                "answer": "a",
                "answer_shortened": False,
                "folded": False,
                "timestamp": exported["created_at"],
            }
        ]
        message = error_text(
            await client.call_tool("import_session", {"data": long_source, "session_id": "n3"})
        )
        assert "data.exchanges[0].question" in message

        # Nothing half-written: none of the refused sessions exists.
        listed = ok(await client.call_tool("list_sessions", {}))
        assert {s["session_id"] for s in listed["sessions"]} == {"c"}
