"""Every kind of export record is checked with the tools' limits; errors name line and field."""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.domain.condense import cache_key
from memory_core.errors import InvalidInputError
from memory_core.ports.transfer import TABLES
from memory_core.services.transfer import FORMAT_VERSION, ParsedExport, parse_export

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
T = "2026-11-20T10:00:00Z"
HEADER = {
    "format": "memstrata-export",
    "format_version": FORMAT_VERSION,
    "schema_version": 7,
    "exported_at": T,
    "project": None,
}
VECTOR = base64.b64encode(struct.pack("<4f", 0.1, 0.2, 0.3, 0.4)).decode()

GOOD: dict[str, dict[str, Any]] = {
    "memory": {
        "id": 1,
        "project": "work",
        "layer": "episodic",
        "key": None,
        "content": "Deployed v1.2",
        "metadata": {},
        "session_id": None,
        "created_at": T,
        "updated_at": T,
        "last_accessed": None,
        "access_count": 0,
        "memory_tier": "RECENT",
        "content_hash": "x",
        "token_count": 3,
    },
    "memory_version": {
        "id": 1,
        "memory_id": 1,
        "project": "work",
        "key": None,
        "content": "Deployed v1.1",
        "metadata": {},
        "tags": ["release"],
        "content_hash": "y",
        "valid_from": T,
        "valid_until": T,
        "change": "update",
    },
    "conversation_session": {
        "project": "work",
        "session_id": "s1",
        "created_at": T,
        "updated_at": T,
        "config": "{}",
        "qa_summary": "",
        "qa_summary_from": None,
        "qa_summary_until": None,
        "next_entry": 2,
        "next_summary": 1,
        "next_exchange": 1,
        "pending_summary": None,
    },
    "conversation_summary": {
        "project": "work",
        "session_id": "s1",
        "summary_no": 1,
        "text": "They talked.",
        "entry_ids": "[1]",
        "token_count": 2,
        "original_tokens": 4,
        "ratio": 0.5,
        "covers_from": T,
        "covers_until": T,
        "source": "fallback",
        "created_at": T,
    },
    "conversation_entry": {
        "project": "work",
        "session_id": "s1",
        "entry_no": 1,
        "type": "message",
        "role": "user",
        "content": "hi",
        "tool_name": None,
        "arguments": None,
        "source": None,
        "is_error": False,
        "created_at": T,
        "token_count": 1,
        "compressed": False,
        "summary_no": None,
    },
    "conversation_exchange": {
        "project": "work",
        "session_id": "s1",
        "exchange_no": 1,
        "question": "Why?",
        "answer": "Because.",
        "answer_shortened": False,
        "created_at": T,
        "folded": False,
    },
    "tool_result": {
        "project": "work",
        "session_id": "s1",
        "cache_key": cache_key("weather", {"city": "Oslo"}),
        "tool_name": "weather",
        "parameters": '{"city": "Oslo"}',
        "result": '{"t": 3}',
        "duration": 5,
        "remaining": 5,
        "created_at": T,
    },
    "scratchpad_snippet": {
        "id": 1,
        "session_id": "flow-1",
        "user_id": "ana",
        "tenant": None,
        "snippet": "prefers metric",
        "norm_hash": "a" * 64,
        "embedding": VECTOR,
        "embed_model": "fake",
        "salient": False,
        "promote_to": None,
        "created_at": T,
        "last_used_at": T,
        "use_seq": 1,
        "use_count": 1,
        "promoted_to": None,
        "promoted_ref": None,
        "promoted_reason": None,
        "promoted_at": None,
    },
    "preference": {
        "id": 1,
        "user_id": "ana",
        "key": "units",
        "value": "metric",
        "flow_id": None,
        "origin": "client",
        "embedding": None,
        "embed_model": None,
        "created_at": T,
        "updated_at": T,
    },
    "playbook": {
        "id": 1,
        "user_id": "ana",
        "flow": "checkout",
        "user_query": "buy a shirt",
        "slots": "{}",
        "tool_calls": "[]",
        "outcome": "paid",
        "record_hash": "b" * 64,
        "embedding": None,
        "embed_model": None,
        "created_at": T,
    },
    "document": {
        "id": 1,
        "tenant": "acme",
        "source": "handbook.md",
        "origin": "ingest",
        "content_hash": "c" * 64,
        "body": "Acme ships on Fridays.",
        "chunk_count": 1,
        "created_at": T,
        "updated_at": T,
    },
    "document_chunk": {
        "id": 1,
        "document_id": 1,
        "tenant": "acme",
        "position": 0,
        "start_char": 0,
        "end_char": 22,
        "text": "Acme ships on Fridays.",
        "embedding": VECTOR,
        "embed_model": "fake",
    },
    "document_revision": {"tenant": "acme", "revision": 1},
}


def line(kind: str, **changes: Any) -> str:
    return json.dumps({"kind": kind, **GOOD[kind], **changes})


def parse(*lines: str) -> ParsedExport:
    """Lines after the header and the two parents (a session, a document): lines 4 on."""
    parents = [line("conversation_session"), line("document")]
    return parse_export([json.dumps(HEADER), *parents, *lines], schema_version=7, now=NOW)


def test_every_kind_has_a_good_record_and_it_parses() -> None:
    assert set(GOOD) == {spec.kind for spec in TABLES}
    parsed = parse(*(line(kind) for kind in GOOD))
    assert [kind for kind, _ in parsed.records[2:]] == list(GOOD)
    chunk = dict(parsed.records[-2][1])
    assert len(chunk["embedding"]) == 16 and chunk["document_id"] == 1


@pytest.mark.parametrize(
    ("kind", "changes", "field"),
    [
        ("conversation_session", {"session_id": "s" * 5000}, "session_id"),
        ("conversation_session", {"project": "work\n"}, "project"),
        ("conversation_session", {"config": '{"recent_window": -1}'}, "config.recent_window"),
        ("conversation_session", {"config": "[]"}, "config"),
        ("conversation_session", {"next_entry": 2**31}, "next_entry"),
        ("conversation_session", {"created_at": "9999-12-31T00:00:00Z"}, "created_at"),
        ("conversation_session", {"qa_summary": "a\x00b"}, "qa_summary"),
        ("conversation_summary", {"entry_ids": '["a"]'}, "entry_ids"),
        ("conversation_summary", {"source": "me"}, "source"),
        ("conversation_summary", {"text": " "}, "text"),
        ("conversation_entry", {"content": "a\x00b"}, "content"),
        ("conversation_entry", {"content": "x" * 200_001}, "content"),
        ("conversation_entry", {"type": "dream"}, "type"),
        ("conversation_entry", {"source": "README.md"}, "source"),
        ("conversation_entry", {"compressed": True}, "summary_no"),
        ("conversation_entry", {"token_count": -1}, "token_count"),
        ("conversation_entry", {"is_error": 1}, "is_error"),
        ("conversation_entry", {"session_id": "nowhere"}, "session_id"),
        ("conversation_exchange", {"answer": ""}, "answer"),
        ("tool_result", {"cache_key": "0" * 64}, "cache_key"),
        ("tool_result", {"duration": 0}, "duration"),
        ("tool_result", {"result": "{not json"}, "result"),
        ("scratchpad_snippet", {"embedding": "!!!"}, "embedding"),
        ("scratchpad_snippet", {"embedding": base64.b64encode(b"abc").decode()}, "embedding"),
        ("scratchpad_snippet", {"embed_model": None}, "embedding"),
        ("scratchpad_snippet", {"snippet": "x" * 2_001}, "snippet"),
        ("scratchpad_snippet", {"user_id": "a b"}, "user_id"),
        ("scratchpad_snippet", {"norm_hash": "zz"}, "norm_hash"),
        ("scratchpad_snippet", {"id": 2**63}, "id"),
        ("scratchpad_snippet", {"promoted_to": "elsewhere"}, "promoted_to"),
        ("preference", {"key": "k" * 513}, "key"),
        ("preference", {"origin": "elsewhere"}, "origin"),
        ("preference", {"colour": "red"}, "colour"),
        ("preference", {"value": None}, "value"),
        ("playbook", {"slots": "[]"}, "slots"),
        ("playbook", {"user_query": "q" * 20_001}, "user_query"),
        ("document", {"body": ""}, "body"),
        ("document", {"origin": "web"}, "origin"),
        ("document", {"id": 0}, "id"),
        ("document_chunk", {"start_char": 30}, "start_char"),
        ("document_chunk", {"document_id": 99}, "document_id"),
        ("document_chunk", {"tenant": "other"}, "tenant"),
        ("document_revision", {"revision": -1}, "revision"),
        ("document_revision", {"tenant": ""}, "tenant"),
    ],
)
def test_hostile_records_name_their_line_and_field(
    kind: str, changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse(line(kind, **changes))
    assert info.value.field == "line 4"
    assert info.value.reason.startswith(f"{field}:") or info.value.reason.startswith(field)


def test_a_missing_field_and_an_unknown_kind_are_named() -> None:
    record = {"kind": "preference", **GOOD["preference"]}
    del record["value"]
    with pytest.raises(InvalidInputError, match="line 4: value: is required"):
        parse(json.dumps(record))
    with pytest.raises(InvalidInputError, match="line 4: kind: must be one of memory,"):
        parse(json.dumps({"kind": "secrets"}))
    with pytest.raises(InvalidInputError, match="line 4: must be a JSON object"):
        parse("[1, 2]")


def test_a_version_1_file_is_memories_without_kind() -> None:
    v1 = json.dumps({**HEADER, "format_version": 1})
    parsed = parse_export([v1, json.dumps(GOOD["memory"])], schema_version=7, now=NOW)
    assert parsed.memories[0].content == "Deployed v1.2"
    # A version 2 file names each record's kind.
    with pytest.raises(InvalidInputError, match="kind"):
        parse(json.dumps(GOOD["memory"]))


def test_bad_lines_of_several_kinds_are_listed_together() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse(
            line("preference", origin="x"),
            line("memory"),
            line("document_chunk", text="a\x00"),
            line("conversation_entry", role="god"),
        )
    reason = info.value.reason
    assert reason.startswith("3 bad lines, nothing imported")
    assert "line 4: origin" in reason and "line 6: text" in reason and "line 7: role" in reason
