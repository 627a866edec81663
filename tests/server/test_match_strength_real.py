"""Match strength with the real default model: documents and playbooks (issue 35, N11/N12).

Chunks and playbook requests are embedded by the model memories are, so their hits are banded
on memory search's scale (strong from cosine 0.5, partial from 0.35): a question no document
is about gets "nothing matched", and a request in other words finds its playbook.
"""

from pathlib import Path
from typing import Any

from mcp import Client

from memory_core.config.knowledge import KnowledgePolicy
from server.settings import ScheduleSettings, Settings
from tests.answer_sizes import DOCUMENTS, text_of
from tests.mcp_client import call, hosted


def _real(tmp_path: Path, **knowledge: Any) -> Settings:
    # embedding_wait: a search waits for the model loading in the background, so its first
    # answer is already by meaning (a wait inside the server, never a deadline of the test).
    return Settings(
        db=tmp_path / "real.db",
        toolsets="all",
        schedule=ScheduleSettings(enabled=False),
        embedding_wait=60,
        knowledge=KnowledgePolicy(**knowledge),
    )


async def _record(client: Client, **requests: str) -> None:
    """Record a playbook of ann per flow (name = its request)."""
    for flow, request in requests.items():
        await call(
            client,
            "playbook_record",
            user="ann",
            flow=flow,
            user_query=request,
            slots={},
            tool_calls=[{"tool": flow}],
            outcome="done",
        )


async def test_documents_answer_a_related_question_and_say_when_nothing_matches(
    tmp_path: Path,
) -> None:
    async with hosted(_real(tmp_path)) as client:
        for source, text in DOCUMENTS.items():
            done = await call(client, "ingest_document", tenant="shop", source=source, text=text)
            assert done["embedded"] is True

        async def search(query: str, **args: Any) -> dict[str, Any]:
            found = await call(
                client, "search_business_context", tenant="shop", query=query, **args
            )
            assert found["mode"] == "hybrid"
            return found

        related = await search("how long do customers have to send a product back?")
        best = related["hits"][0]
        assert best["source"] == "policies/refunds.md" and best["match"] == "strong"
        assert all(h["match"] in {"strong", "partial"} for h in related["hits"])
        # Measured: the refunds chunk 0.66 against this question; shipping 0.26 (weak, out).
        assert "policies/shipping.md" not in [h["source"] for h in related["hits"]]
        assert (await search("who won the football world cup in 2018"))["count"] == 0
        # Two chunks hold "answer" but nothing about phones or nights: weak, left out, and
        # the text answer says nothing matched (they come back, weak, when asked for).
        result = await client.call_tool(
            "search_business_context",
            {"tenant": "shop", "query": "who answers the phone at night"},
        )
        assert result.structured_content is not None
        assert result.structured_content["weaker"] == 2
        assert text_of(result).splitlines()[0] == (
            "0 chunks of shop (hybrid), 2 weaker left out by min_match: nothing matched."
        )
        every = await search("who answers the phone at night", min_match="weak")
        assert [h["match"] for h in every["hits"]] == ["weak", "weak"]


async def test_a_playbook_asked_for_in_other_words_is_found(tmp_path: Path) -> None:
    # No rank-all fallback: what comes back is what matches, as for a user with many playbooks.
    async with hosted(_real(tmp_path, preference_rank_all_max=0)) as client:
        await _record(
            client,
            deploy="deploy the web app to staging",
            report="export the monthly sales report as a PDF",
            booking="book a table for two at an italian restaurant tonight",
        )
        # 0.53 against "deploy the web app to staging": under playbook_find's former 0.6 cut.
        found = await call(
            client, "playbook_find", user="ann", query="ship the app to the test server"
        )
        assert found["mode"] == "semantic"
        assert [(m["playbook"]["flow"], m["match"]) for m in found["matches"]] == [
            ("deploy", "strong")
        ]
        nothing = await call(client, "playbook_find", user="ann", query="recipe for chocolate cake")
        assert nothing["count"] == 0


async def test_a_user_with_few_playbooks_gets_them_ranked_weak_ones_marked(
    tmp_path: Path,
) -> None:
    async with hosted(_real(tmp_path)) as client:
        await _record(
            client,
            deploy="deploy the web app to staging",
            report="export the monthly sales report as a PDF",
        )
        found = await call(
            client, "playbook_find", user="ann", query="push the website to the staging environment"
        )
    assert [(m["playbook"]["flow"], m["match"]) for m in found["matches"]] == [
        ("deploy", "strong"),
        ("report", "weak"),
    ]
    assert "2 playbooks, so all are ranked" in found["notes"][0]
