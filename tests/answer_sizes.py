"""What a model receives of each core and knowledge tool's answer, on a realistic store.

Claude Code hands the model a tool result's `structuredContent` (as compact JSON) when there
is one, else its text content (tests/data and issue 31). `received` counts what the model
would read that way; `text` counts the text answer written for the model. Shared by the
answer-size tests and by `python -m tests.answer_sizes` (the figures for docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CallToolResult, Implementation

__all__ = [
    "CLAUDE_CODE",
    "DOCUMENTS",
    "KNOWLEDGE_CALLS",
    "STORE",
    "AnswerSize",
    "answer_sizes",
    "fill_knowledge",
    "fill_store",
    "knowledge_answer_sizes",
    "received_by_model",
    "text_of",
]

# The clientInfo Claude Code sends in `initialize` (2.1.332).
CLAUDE_CODE = Implementation(name="claude-code", version="2.1.332")

# (layer, key, content): a project's memory after a few weeks of work on a web shop.
STORE: tuple[tuple[str, str | None, str], ...] = (
    ("semantic", "db.engine", "Production runs PostgreSQL 16 on a managed instance in eu-west-1."),
    ("semantic", "deploy.target", "The shop deploys to Fly.io; staging is shop-staging.fly.dev."),
    ("semantic", "user.editor", "The user works in Neovim with the LazyVim distribution."),
    (
        "procedural",
        "changing the checkout flow",
        "Run the Playwright checkout suite (make e2e-checkout) and ask for a review from payments.",
    ),
    (
        "procedural",
        "adding a database migration",
        "Write it with alembic revision --autogenerate, then check the SQL by hand before merging.",
    ),
    (
        "episodic",
        None,
        "We moved the payment webhooks from Flask to FastAPI in October because Flask's async "
        "story was weak and the webhook handler kept timing out under Black Friday load.",
    ),
    (
        "episodic",
        None,
        "The payment webhook retry policy is exponential backoff starting at 30 seconds, at most "
        "8 attempts, after which the event lands in the dead-letter table for manual replay.",
    ),
    (
        "episodic",
        None,
        "Stripe signs every payment webhook; we verify the signature with the endpoint secret "
        "from STRIPE_WEBHOOK_SECRET before parsing the body, and reject events older than 5 min.",
    ),
    (
        "episodic",
        None,
        "A duplicate payment webhook charged a customer twice on 3 November; the fix stores each "
        "event id in processed_events and skips ids already seen (idempotency).",
    ),
    (
        "episodic",
        None,
        "The payment webhook endpoint is /api/webhooks/stripe and is excluded from CSRF checks; "
        "its rate limit is 100 requests per second per source IP.",
    ),
    (
        "episodic",
        None,
        "Refunds are issued from the admin panel, never by editing the orders table directly, so "
        "that the ledger and Stripe stay in step.",
    ),
    (
        "episodic",
        None,
        "The product search uses PostgreSQL full-text search with a GIN index on "
        "products.search_vector, rebuilt nightly by a cron job.",
    ),
)

SEARCH = "payment webhook"

# A tenant's business documents (source -> text), a user's rules and playbooks: the same shop.
DOCUMENTS: dict[str, str] = {
    "policies/refunds.md": (
        "# Refunds\n\nCustomers may return any unused product within 30 days of delivery for a "
        "full refund. Refunds go to the original payment method within 5 business days after "
        "the returned item reaches the warehouse. Final-sale items cannot be returned.\n\n"
        "Shipping costs are refunded only when the item arrived damaged or was the wrong item. "
        "Support starts a return from the admin panel; a prepaid label is emailed within an hour."
    ),
    "policies/shipping.md": (
        "# Shipping\n\nWe ship to the EU, the UK and Switzerland. Standard shipping takes 3-5 "
        "business days and is free above 50 euros; express takes 1-2 days and costs 12 euros. "
        "Orders placed before 14:00 leave the warehouse the same day; tracking numbers are "
        "emailed when the parcel leaves. Customs fees for the UK and Switzerland are paid by "
        "the customer."
    ),
    "support/payments.md": (
        "# Payments\n\nWe accept cards through Stripe and PayPal. A payment that fails three "
        "times cancels the order and emails the customer. Chargebacks are answered by the "
        "payments team within 7 days, with the delivery proof from the carrier."
    ),
    "team/onboarding.md": (
        "# Onboarding\n\nNew support agents shadow a senior agent for their first week and "
        "answer tickets alone from the second. The support handbook lives in Notion; the "
        "escalation rota is in PagerDuty."
    ),
}
USER = "ann"
RULES: dict[str, str] = {
    "response.verbosity": "Short answers, no preamble; details only when asked.",
    "units": "Metric units, prices in euros.",
    "tone": "Friendly but direct; never apologise twice.",
    "refunds.approval": "Ask before refunding more than 200 euros.",
}
PLAYBOOKS: tuple[dict[str, Any], ...] = (
    {
        "flow": "refund",
        "user_query": "refund order 1042, the parcel arrived damaged",
        "slots": {"order": 1042, "reason": "damaged"},
        "tool_calls": [{"tool": "orders.get"}, {"tool": "refunds.create", "full": True}],
        "outcome": "refunded in full, label emailed",
    },
    {
        "flow": "shipping-status",
        "user_query": "where is my parcel for order 2210",
        "slots": {"order": 2210},
        "tool_calls": [{"tool": "orders.get"}, {"tool": "carrier.track"}],
        "outcome": "told the customer it arrives tomorrow",
    },
)
# The knowledge tools' calls whose answers are measured (after fill_knowledge).
KNOWLEDGE_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "search_business_context",
        {"tenant": "shop", "query": "can a customer return a damaged product for a refund"},
    ),
    ("list_documents", {"tenant": "shop"}),
    (
        "ingest_document",
        {"tenant": "shop", "source": "policies/gifts.md", "text": "Gift cards never expire."},
    ),
    ("delete_documents", {"tenant": "shop", "sources": ["policies/gifts.md"]}),
    ("preferences_find", {"user": USER, "situation": "answering a refund request in euros"}),
    ("preferences_get", {"user": USER, "key": "units"}),
    ("preferences_list", {"user": USER}),
    ("playbook_find", {"user": USER, "query": "refund order 881, it arrived broken"}),
    (
        "playbook_record",
        {
            "user": USER,
            "flow": "address-change",
            "user_query": "change the delivery address of order 3301",
            "slots": {"order": 3301},
            "tool_calls": [{"tool": "orders.update_address"}],
            "outcome": "address changed before dispatch",
        },
    ),
)


@dataclass(frozen=True)
class AnswerSize:
    """One answer: its text content's length and what the model would receive of it."""

    tool: str
    text: int
    received: int
    structured: bool
    lines: int  # of the text answer


def text_of(result: CallToolResult) -> str:
    """The text content of a tool result."""
    return "".join(getattr(block, "text", "") for block in result.content)


def received_by_model(result: CallToolResult) -> str:
    """What Claude Code puts in the model's tool_result: structuredContent's JSON, else text."""
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return text_of(result)


async def fill_store(client: Client) -> None:
    """Store STORE through the tools, as a client would."""
    for layer, key, content in STORE:
        args: dict[str, Any] = {"layer": layer, "content": content}
        if key is not None:
            args["key"] = key
        result = await client.call_tool("append", args)
        assert not result.is_error, text_of(result)


async def fill_knowledge(client: Client) -> None:
    """Store DOCUMENTS for tenant "shop", and RULES and PLAYBOOKS for USER, through the tools."""
    calls = [
        ("ingest_document", {"tenant": "shop", "source": s, "text": t})
        for s, t in DOCUMENTS.items()
    ]
    calls += [
        ("preferences_update", {"user": USER, "key": k, "value": v}) for k, v in RULES.items()
    ]
    calls += [("playbook_record", {"user": USER, **p}) for p in PLAYBOOKS]
    for tool, args in calls:
        result = await client.call_tool(tool, args)
        assert not result.is_error, text_of(result)


async def knowledge_answer_sizes(client: Client) -> list[AnswerSize]:
    """Call KNOWLEDGE_CALLS on a store filled by fill_knowledge."""
    return await _sizes(client, KNOWLEDGE_CALLS)


async def answer_sizes(client: Client) -> list[AnswerSize]:
    """Call search (5 hits), recall, append, learn and load_context on a filled store."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": SEARCH, "limit": 5}),
        ("recall", {"key": "deploy.target"}),
        ("append", {"layer": "episodic", "content": "The checkout page now shows PayPal."}),
        ("learn", {"key": "ci.provider", "value": "GitHub Actions, with a self-hosted runner."}),
        ("load_context", {}),
    ]
    return await _sizes(client, calls)


async def _sizes(client: Client, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[AnswerSize]:
    sizes = []
    for tool, args in calls:
        result = await client.call_tool(tool, args)
        text = text_of(result)
        assert not result.is_error, text
        sizes.append(
            AnswerSize(
                tool=tool,
                text=len(text),
                received=len(received_by_model(result)),
                structured=result.structured_content is not None,
                lines=text.count("\n") + 1,
            )
        )
    return sizes


async def _measure(client_info: Implementation | None) -> list[AnswerSize]:
    from server.app import build_server
    from server.settings import ScheduleSettings, Settings

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db=Path(tmp) / "memory.db",
            project="shop",
            schedule=ScheduleSettings(enabled=False),
            embedding_model="none",
            toolsets="all",
        )
        async with Client(build_server(settings), client_info=client_info) as client:
            await fill_store(client)
            await fill_knowledge(client)
            return await answer_sizes(client) + await knowledge_answer_sizes(client)


def main() -> None:
    """Print the figures, for Claude Code's clientInfo and for a generic client."""
    from server.logging import configure_logging

    configure_logging("WARNING", "console")
    for label, info in (("claude-code", CLAUDE_CODE), ("generic client", None)):
        print(f"{label}: tool, text chars, chars the model receives")  # noqa: T201
        for size in asyncio.run(_measure(info)):
            form = "structuredContent" if size.structured else "text"
            print(f"  {size.tool:23} {size.text:6} {size.received:6}  ({form})")  # noqa: T201
    sys.stdout.flush()


if __name__ == "__main__":
    main()
