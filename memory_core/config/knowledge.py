"""Thresholds of the scratchpad, preferences, playbooks and business context (plain values)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["KnowledgePolicy"]


class KnowledgePolicy(BaseModel):
    """Caps, promotion rules, similarity thresholds and chunking of the cache hierarchy."""

    model_config = ConfigDict(frozen=True)

    scratchpad_cap: int = Field(
        64,
        ge=1,
        le=10_000,
        description="Snippets kept per session; the least recently used "
        "one is evicted beyond this.",
    )
    max_snippet_chars: int = Field(2_000, ge=1, description="Longest scratchpad snippet.")
    recurrence_count: int = Field(
        3,
        ge=2,
        description="A snippet written in this many different sessions (flows) is promoted.",
    )
    recurrence_similarity: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Cosine at or above which two snippets count as the same snippet.",
    )
    preference_similarity: float = Field(
        # Calibrated on tests/data/preference_relevance.json (docs/benchmarks.md): the best F1
        # with the default model; 0.3 returned nothing for 10 of 24 labelled situations.
        0.25,
        ge=-1,
        le=1,
        description="Least cosine for `preferences_find` to return a rule as a match.",
    )
    preference_rank_all_max: int = Field(
        20,
        ge=0,
        le=1_000,
        description="A user with at most this many rules (or playbooks) gets all of them from "
        "`preferences_find` (`playbook_find`), ranked, those under the cut marked `weak` "
        "(0: never). Playbooks are banded by the memories' match strength "
        "(MEMSTRATA_RANKING__MATCH_*).",
    )
    keyword_overlap: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Without an embedding model: the share of the query's words from which a "
        "preference or playbook matches `partial`.",
    )
    max_value_chars: int = Field(
        20_000, ge=1, description="Longest preference value, playbook field or query."
    )
    chunk_chars: int = Field(
        1_200, ge=100, le=100_000, description="Longest chunk of a business document."
    )
    chunk_overlap: int = Field(
        150, ge=0, description="Characters a chunk repeats from the end of the previous one."
    )
    max_document_chars: int = Field(
        5_000_000, ge=1, description="Longest business document accepted in one call."
    )
    candidates: int = Field(
        100, ge=10, le=4096, description="Keyword and vector candidates per business search."
    )
    results: int = Field(10, ge=1, le=100, description="Chunks a business search returns.")
    max_chunks_per_source: int = Field(
        3,
        ge=1,
        description="Most chunks of one document in a business search's answer (while "
        "other documents still have candidates).",
    )
    min_chunk_similarity: float = Field(
        0.2, ge=-1, le=1, description="Vector candidates below this cosine are dropped."
    )
    rrf_k: float = Field(60.0, gt=0, description="Reciprocal-rank fusion constant.")
    embed_batch: int = Field(32, ge=1, description="Chunks embedded per model call.")
    embed_wait_seconds: float = Field(
        60.0,
        ge=0,
        description="How long a write waits for the embedding model to finish loading before "
        "it goes on without vectors.",
    )

    # Shared anonymised patterns (issue 33.6, docs/business_context.md "Shared patterns").
    shared_patterns: bool = Field(
        True,
        description="Allow tenants to opt in to share anonymised patterns (false: no tenant can "
        "opt in, nothing is computed, and searches return no shared pattern).",
    )
    shared_min_tenants: int = Field(
        3,
        ge=2,
        le=1_000,
        description="k: a pattern is shared only when this many opted-in tenants hold it "
        "and every word of it is written by this many of them.",
    )
    shared_similarity: float = Field(
        # Calibrated on tests/data/shared_pattern_pairs.json with the default model: every
        # same-pattern pair is >= 0.924, the near misses below it but two (which the word rule
        # or k catches, docs/business_context.md); 0.91 leaves a margin on both sides.
        0.91,
        gt=0,
        le=1,
        description="Least cosine for a tenant's passage to hold another tenant's pattern.",
    )
    shared_word_overlap: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Least share of each passage's content words the other must hold "
        "(both ways) for two tenants' passages to be one pattern.",
    )
    shared_min_words: int = Field(
        4, ge=1, le=50, description="Content words a sentence needs to be a pattern candidate."
    )
    shared_max_passages: int = Field(
        500,
        ge=1,
        le=100_000,
        description="Most anonymised sentences one tenant contributes (its oldest documents "
        "first); bounds the pattern job to (tenants x this)^2 vector products.",
    )
    shared_embed_per_run: int = Field(
        5_000,
        ge=1,
        le=1_000_000,
        description="Most sentences one pattern refresh embeds; documents left over are taken "
        "by the next run.",
    )
    shared_results: int = Field(
        3, ge=1, le=20, description="Most shared patterns added to a business search."
    )
    shared_query_similarity: float = Field(
        0.45,
        ge=-1,
        le=1,
        description="Least cosine of the query to a shared pattern for a search to return it.",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> KnowledgePolicy:
        if self.chunk_overlap >= self.chunk_chars:
            raise ValueError("chunk_overlap must be smaller than chunk_chars")
        return self
