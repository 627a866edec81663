"""Pure helpers of the cache hierarchy: diversity, agent.md, text similarity, policy."""

import pytest
from pydantic import ValidationError

from memory_core.config.knowledge import KnowledgePolicy
from memory_core.domain.agent_md import parse_agent_md, render_agent_md
from memory_core.domain.diversity import cap_per_group
from memory_core.domain.similarity import keyword_overlap, normalise, normalised_hash


def test_cap_per_group_spreads_then_fills_with_the_overflow() -> None:
    ranked = ["a1", "a2", "a3", "a4", "b1", "a5", "c1"]
    assert cap_per_group(ranked, lambda s: s[0], per_group=2, limit=5) == [
        "a1",
        "a2",
        "b1",
        "c1",
        "a3",
    ]
    assert cap_per_group(ranked, lambda s: s[0], per_group=2, limit=2) == ["a1", "a2"]
    assert cap_per_group([], lambda s: s, per_group=1, limit=3) == []


def test_parse_agent_md_names_sections_and_skips_empty_ones() -> None:
    sections = parse_agent_md("# Title\n\n## Refund Policy!\n\nWithin 30 days.\n\n## Empty\n")
    assert [(s.source, s.text) for s in sections] == [
        ("agent.md#refund-policy", "## Refund Policy!\n\nWithin 30 days.")
    ]
    assert parse_agent_md("") == []


def test_render_agent_md_lists_learned_items() -> None:
    [intro] = parse_agent_md("Hello.")
    text = render_agent_md([intro], ["Ship  on\nMondays."])
    assert text == "Hello.\n\n## Learned\n\n- Ship on Mondays.\n"
    assert render_agent_md([], []) == ""


def test_normalised_text_ignores_case_spacing_and_punctuation() -> None:
    assert normalise("  Use METRIC units! ") == "use metric units"
    assert normalised_hash("Use metric units.") == normalised_hash("use  metric units")


def test_keyword_overlap_counts_content_words() -> None:
    assert keyword_overlap("how do I deploy", "deploy with make") == 1.0
    assert keyword_overlap("metric units", "units: imperial") == 0.5
    assert keyword_overlap("?!", "anything") == 0.0


def test_policy_refuses_overlap_as_large_as_a_chunk() -> None:
    with pytest.raises(ValidationError, match="chunk_overlap"):
        KnowledgePolicy(chunk_chars=100, chunk_overlap=100)
