"""Conversation answers a client can carry, through the in-memory MCP client, on both backends.

The 15 x 20 KB case of issue 18: before, the 15th add_session_entry answer carried the whole
transcript (~124 KB) and every later one repeated it; every answer echoed the entry back.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from mcp import Client

from server.settings import Settings
from tests.backends import settings_on
from tests.fakes import FrozenClock
from tests.mcp_client import call, hosted

WORDS = ["deploy", "release", "staging", "database", "latency", "budget", "replica", "invoice"]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return settings_on(request, settings)


def text_of(seed: int, size: int = 20_000) -> str:
    rng = random.Random(seed)
    out = " ".join(rng.choice(WORDS) for _ in range(size // 5))
    return f"FILE{seed}-START " + out[: size - 40] + f" FILE{seed}-END"


def answer_bytes(result: Any) -> int:
    """The whole tool result as a client receives it (text content and structuredContent)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def with_policy(settings: Settings, **changes: Any) -> Settings:
    policy = settings.conversation.model_copy(update=changes)
    return settings.model_copy(update={"conversation": policy})


async def add_context(client: Client, i: int) -> tuple[dict[str, Any], int]:
    result = await client.call_tool(
        "add_session_entry",
        {"session_id": "s", "type": "context", "content": text_of(i), "source": f"f{i}.py"},
    )
    assert not result.is_error, result.content
    return dict(result.structured_content or {}), answer_bytes(result)


async def test_a_summary_request_is_sent_once_capped_and_readable_in_pages(
    settings: Settings, clock: FrozenClock
) -> None:
    async with hosted(settings, clock=clock) as client:
        await call(client, "start_session", session_id="s")
        answers = [await add_context(client, i) for i in range(15)]
        later = [
            await client.call_tool(
                "add_session_entry",
                {"session_id": "s", "type": "message", "role": "user", "content": f"next {i}"},
            )
            for i in range(3)
        ]
        # Every answer echoes ids and counts, not the 20 KB entry.
        for n, (out, size) in enumerate(answers[:14], start=1):
            assert out["entry_id"] == n and "content" not in out and "entry" not in out
            assert out["active_entries"] == n and out["token_count"] == 4_996  # 20 KB / 4
            status = None if n <= 10 else "too_few_entries"  # over 50,000 tokens from the 11th
            assert (out.get("compression") or {}).get("status") == status and size < 1_000
        # The 15th crosses 50,000 tokens: one request, condensed to the caps.
        request_answer, request_size = answers[14]
        comp = request_answer["compression"]
        assert comp["status"] == "summary_requested"
        request = comp["summary_request"]
        assert request["entry_ids"] == [1, 2, 3, 4, 5]
        assert request["cut_entry_ids"] == [1, 2, 3, 4, 5]
        assert len(request["transcript"].encode()) <= 16_000
        assert all(f"FILE{i}-START" in request["transcript"] for i in range(5))
        assert "read_summary_request (pages 1-" in request["instructions"]
        assert request_size < 30_000  # text content and structuredContent both carry it
        # Later answers remind, without the transcript.
        for result in later:
            out = result.structured_content or {}
            assert out["compression"]["status"] == "summary_pending"
            assert out["compression"]["summary_request"] is None
            assert answer_bytes(result) < 1_500
        # The whole transcript, page by page, holds every entry word for word.
        whole, page = "", 1
        while True:
            read = await call(client, "read_summary_request", session_id="s", page=page)
            assert read["pages"] == request["pages"] and len(read["transcript"].encode()) <= 16_000
            whole += read["transcript"]
            if read["next_page"] is None:
                break
            page = read["next_page"]
        assert page == request["pages"] >= 7
        for i in range(5):
            assert text_of(i) in whole.replace("\n", "")
        # The client's summary still replaces them.
        done = await call(
            client, "submit_session_summary", session_id="s", summary="Read files 0-4."
        )
        assert done["status"] == "compressed" and done["summary"]["entry_ids"] == [1, 2, 3, 4, 5]
        context = await call(client, "get_session_context", session_id="s")
        assert "Read files 0-4." in context["text"] and "FILE0-START" not in context["text"]


async def test_an_ignored_request_still_ends_in_the_fallback(
    settings: Settings, clock: FrozenClock
) -> None:
    small = with_policy(
        settings,
        recent_window=2,
        min_compress_entries=2,
        compress_entry_limit=4,
        client_summary_grace=2,
    )
    async with hosted(small, clock=clock) as client:
        await call(client, "start_session", session_id="s")
        statuses = []
        for i in range(8):
            out = await call(
                client,
                "add_session_entry",
                session_id="s",
                type="message",
                role="user",
                content=f"turn {i}",
            )
            statuses.append((out.get("compression") or {}).get("status"))
        assert statuses == [
            None,
            None,
            None,
            None,
            "summary_requested",
            "summary_pending",
            "summary_pending",
            "compressed",
        ]
        stats = await call(client, "get_session_stats", session_id="s")
        assert stats["summaries"] == 1


async def test_automatic_compression_can_be_turned_off_per_session_and_globally(
    settings: Settings, clock: FrozenClock
) -> None:
    small = with_policy(settings, recent_window=1, min_compress_entries=2, compress_entry_limit=3)

    async def add(client: Client, sid: str, n: int) -> list[Any]:
        return [
            (
                await call(
                    client,
                    "add_session_entry",
                    session_id=sid,
                    type="message",
                    role="user",
                    content=f"turn {i}",
                )
            ).get("compression")
            for i in range(n)
        ]

    async with hosted(small, clock=clock) as client:
        await call(client, "start_session", session_id="off")
        changed = await call(
            client, "update_memory_config", session_id="off", changes={"auto_compress": False}
        )
        assert changed["config"]["auto_compress"] is False
        assert await add(client, "off", 6) == [None] * 6
        await call(client, "start_session", session_id="on")
        assert (await add(client, "on", 4))[-1]["status"] == "summary_requested"
        # Asked for, it still compresses.
        done = await call(client, "compress_session", session_id="off", source="fallback")
        assert done["status"] == "compressed"
    globally = with_policy(small, auto_compress=False)
    async with hosted(globally, clock=clock) as client:
        await call(client, "start_session", session_id="g")
        assert await add(client, "g", 6) == [None] * 6
        await call(client, "update_memory_config", session_id="g", changes={"auto_compress": True})
        assert (await add(client, "g", 1))[0]["status"] == "summary_requested"


async def test_cached_tool_results_are_part_of_the_context_within_the_budget(
    settings: Settings, clock: FrozenClock
) -> None:
    async with hosted(settings, clock=clock) as client:
        await call(client, "start_session", session_id="s")
        await call(
            client,
            "add_session_entry",
            session_id="s",
            type="message",
            role="user",
            content="What is the weather in Paris?",
        )
        await call(
            client,
            "cache_tool_result",
            session_id="s",
            tool_name="weather",
            parameters={"city": "Paris"},
            result={"celsius": 21, "sky": "clear"},
            duration=3,
        )
        await call(
            client,
            "cache_tool_result",
            session_id="s",
            tool_name="read_file",
            parameters={"path": "big.txt"},
            result="x " * 5_000,
            duration=2,
        )
        context = await call(client, "get_session_context", session_id="s")
        text = context["text"]
        assert "=== Cached Tool Results (reuse with lookup_tool_result) ===" in text
        assert (
            '[weather({"city":"Paris"}): 3/3 exchanges remaining] {"celsius":21,"sky":"clear"}'
            in (text)
        )
        big = next(line for line in text.splitlines() if line.startswith("[read_file("))
        assert len(big.encode()) < 1_200  # cut to about 1,000 bytes
        assert context["cached_results"] == 2 and context["omitted_cached_results"] == 0
        tight = await call(client, "get_session_context", session_id="s", token_budget=40)
        assert "Paris?" in tight["text"] and "Cached Tool Results" not in tight["text"]
        assert tight["cached_results"] == 0 and tight["omitted_cached_results"] == 2
