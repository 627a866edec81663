"""A realistic Claude Code transcript (JSONL lines as Claude Code writes them), for hook tests."""

from __future__ import annotations

import json
from typing import Any

SESSION = "0b5c8f3e-4a2d-4f7e-9d61-2f1c7a9e5b10"


def _line(uuid: str, parent: str | None, kind: str, message: dict[str, Any], **extra: Any) -> str:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/shop",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2026-11-23T09:00:00.000Z",
        **extra,
    }
    return json.dumps(record) + "\n"


def first_part() -> list[str]:
    """A prompt, a thinking+text+tool_use answer, its tool_result, a meta line, a bad line."""
    return [
        json.dumps({"type": "queue-operation", "operation": "dequeue", "sessionId": SESSION})
        + "\n",
        _line(
            "u1",
            None,
            "user",
            {"role": "user", "content": "<command-name>/clear</command-name>"},
            isMeta=True,
        ),
        _line(
            "u2",
            "u1",
            "user",
            {"role": "user", "content": "Why does checkout fail with the Stripe webhook?"},
        ),
        _line(
            "a1",
            "u2",
            "assistant",
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "thinking", "thinking": "Look at the handler.", "signature": "x"},
                    {"type": "text", "text": "Let me read the webhook handler."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Read",
                        "input": {"file_path": "/home/dev/shop/webhooks.py"},
                    },
                ],
                "stop_reason": "tool_use",
            },
        ),
        _line(
            "u3",
            "a1",
            "user",
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": "toolu_01",
                        "type": "tool_result",
                        "content": [
                            {
                                "type": "text",
                                "text": "STRIPE_KEY = 'sk_live_"
                                + "4eC39HqLyjWDarjtT1zdp7dc'\ndef handle(): ...",
                            }
                        ],
                    }
                ],
            },
            toolUseResult={"type": "text"},
        ),
        "{this line is damaged\n",
        _line(
            "a2",
            "u3",
            "assistant",
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "The handler does not verify the signature header."}
                ],
            },
        ),
    ]


def second_part() -> list[str]:
    """A failing tool call, a compaction boundary and summary, a title line, a last answer."""
    return [
        _line(
            "a3",
            "a2",
            "assistant",
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_02",
                        "name": "Bash",
                        "input": {"command": "pytest tests/test_webhooks.py"},
                    }
                ],
            },
        ),
        _line(
            "u4",
            "a3",
            "user",
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": "toolu_02",
                        "type": "tool_result",
                        "content": "1 failed: test_signature",
                        "is_error": True,
                    }
                ],
            },
        ),
        json.dumps(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "uuid": "c1",
                "compactMetadata": {"trigger": "auto", "preTokens": 155000},
            }
        )
        + "\n",
        _line(
            "u5",
            None,
            "user",
            {
                "role": "user",
                "content": "This session is being continued from a previous conversation. "
                "Summary: checkout webhook lacked signature verification; fix in progress.",
            },
            isCompactSummary=True,
        ),
        json.dumps({"type": "summary", "summary": "Stripe webhook signature fix", "leafUuid": "u5"})
        + "\n",
        _line(
            "u6",
            "u5",
            "user",
            {"role": "user", "content": "Add the verification and keep the retry logic."},
        ),
        _line(
            "a4",
            "u6",
            "assistant",
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done: handle() now calls verify_header()."}],
            },
        ),
    ]
