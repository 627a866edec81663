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
        description="A user with at most this many rules gets all of them from "
        "`preferences_find`, ranked, those under the cut marked `weak` (0: never).",
    )
    playbook_similarity: float = Field(
        0.6, ge=-1, le=1, description="Least cosine for `playbook_find` to return a playbook."
    )
    keyword_overlap: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Without an embedding model: least share of the query's words a preference "
        "or playbook must contain to match.",
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

    @model_validator(mode="after")
    def _overlap_below_size(self) -> KnowledgePolicy:
        if self.chunk_overlap >= self.chunk_chars:
            raise ValueError("chunk_overlap must be smaller than chunk_chars")
        return self
