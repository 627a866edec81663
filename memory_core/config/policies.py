"""Plain typed configuration values for memory_core (reading the environment is server's job)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_core.config.tier_windows import ACTIVE_HOURS, ARCHIVED_DAYS, RECENT_HOURS

__all__ = ["ConversationPolicy", "Limits", "PressurePolicy", "RankingPolicy", "TierPolicy"]


class TierPolicy(BaseModel):
    """Age thresholds (since last access, else creation) that separate the four tiers."""

    model_config = ConfigDict(frozen=True)

    active_hours: float = Field(ACTIVE_HOURS, gt=0, description="Younger than this is ACTIVE.")
    recent_hours: float = Field(RECENT_HOURS, gt=0, description="Younger than this is RECENT.")
    archived_days: float = Field(
        ARCHIVED_DAYS, gt=0, description="Younger than this is ARCHIVED; older is EXPIRED."
    )

    @model_validator(mode="after")
    def _ordered(self) -> TierPolicy:
        if not self.active_hours < self.recent_hours < self.archived_days * 24:
            raise ValueError(
                "tier thresholds must grow: active_hours < recent_hours < archived_days*24"
            )
        return self


class RankingPolicy(BaseModel):
    """Weights of the signals added to the normalised text score when ranking search hits."""

    model_config = ConfigDict(frozen=True)

    active_boost: float = Field(0.3, description="Added to the score of an ACTIVE memory.")
    recent_boost: float = Field(0.1, description="Added to the score of a RECENT memory.")
    archived_boost: float = Field(0.0, description="Added to the score of an ARCHIVED memory.")
    expired_boost: float = Field(-0.2, description="Added to the score of an EXPIRED memory.")
    recency_weight: float = Field(0.1, ge=0, description="Weight of the recency signal in [0, 1].")
    recency_half_life_hours: float = Field(
        168.0, gt=0, description="Age at which the recency signal has halved."
    )
    fusion: Literal["rrf", "convex"] = Field(
        "rrf",
        description="How hybrid search combines its lists: reciprocal-rank fusion, or a convex "
        "combination of min-max normalised BM25 and cosine scores.",
    )
    # Tuned on LoCoMo dev only (docs/benchmarks.md): a small k trusts each list's top ranks,
    # and BM25 over speaker- and date-stamped turns is the stronger of the two lists there.
    rrf_k: float = Field(10.0, gt=0, description="Reciprocal-rank fusion constant.")
    keyword_stopwords: bool = Field(
        True, description="Drop English function words from keyword queries (kept if alone)."
    )
    keyword_prefix_min_chars: int = Field(
        3,
        ge=0,
        description="Keyword query words of at least this many characters also match the words "
        'they begin ("vuln" finds "vulnerabilities"); exact matches still rank first. '
        "0 turns prefix matching off.",
    )
    keyword_weight: float = Field(1.5, ge=0, description="Weight of the BM25 list in fusion.")
    vector_weight: float = Field(1.0, ge=0, description="Weight of the vector list in fusion.")
    # Tuned on LoCoMo dev only (docs/benchmarks.md): R@10 0.760-0.767 over session_top 1-5 and
    # session_weight 0.3-1.0 alone; with the author, date and follow-up lifts, 0.75-1.5 (top
    # 2-3) give 0.802-0.809 against 0.800 at 0.5, and 1.0 is that plateau's middle.
    session_weight: float = Field(
        1.0,
        ge=0,
        description="Share of its session's strength added to a memory's relevance: the mean "
        "text score of the session's best `session_top` candidates (0 turns it off). A memory "
        "without a session is a session of one.",
    )
    session_top: int = Field(
        3, ge=1, description="How many of a session's best candidates make up its strength."
    )
    # Measured on LoCoMo dev (docs/benchmarks.md, "Match strength"): where a hit's absolute
    # match strength (strong / partial / weak) starts, by cosine similarity and word share.
    match_strong_cosine: float = Field(
        0.5, ge=-1, le=1, description="Cosine similarity from which a hit is a strong match."
    )
    match_partial_cosine: float = Field(
        0.35, ge=-1, le=1, description="Cosine similarity from which a hit is a partial match."
    )
    match_strong_words: float = Field(
        1.0,
        ge=0,
        le=1.01,
        description="Share of the query's words from which a hit is a strong match "
        "(above 1: never by words alone).",
    )
    match_partial_words: float = Field(
        0.5,
        ge=0,
        le=1.01,
        description="Share of the query's words from which a hit is a partial match.",
    )
    # Measured on LoCoMo dev (docs/benchmarks.md, "Who said it" and "The memory that
    # follows": 0.3 is the middle of a 0.2-0.4 plateau).
    author_weight: float = Field(
        0.3,
        ge=0,
        description="Share of the best candidate's relevance added to memories whose author "
        "the query names (by full name or first name; 0 turns it off).",
    )
    # Measured on LoCoMo dev (docs/benchmarks.md, "When it happened").
    date_weight: float = Field(
        0.2,
        ge=0,
        description="Share of the best candidate's relevance added to memories whose dates "
        'match a time the query names ("in May 2023", "last summer"; 0 turns it off).',
    )
    when_weight: float = Field(
        0.1,
        ge=0,
        description='Share of the best candidate\'s relevance added, when the query asks "when", '
        "to memories that say when something happened (0 turns it off).",
    )
    # Measured on LoCoMo dev (docs/benchmarks.md, "The memory that follows"): 0.1-0.3 give
    # the same R@10; R@1 and MRR fall as it grows, so the low end.
    follow_weight: float = Field(
        0.1,
        ge=0,
        description="Share of the best candidate's relevance, scaled by how well the next "
        "memory of its session matches, added to a memory (a question is lifted by the reply "
        "that answers it; 0 turns it off).",
    )
    min_similarity: float = Field(
        0.2, ge=-1, le=1, description="Vector hits below this cosine similarity are dropped."
    )
    digest_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Factor on the text score of a recorded session's digest (metadata kind "
        "session_summary), so what was said in the session ranks above its summary.",
    )
    duplicate_similarity: float = Field(
        0.95, gt=0, le=1, description="Cosine at or above which an append is a near-duplicate."
    )


class Limits(BaseModel):
    """Bounds on what a client may write or ask for in one call."""

    model_config = ConfigDict(frozen=True)

    max_content_chars: int = Field(20_000, ge=1, description="Longest memory text accepted.")
    max_key_chars: int = Field(
        512, ge=1, description="Longest semantic key or procedural condition."
    )
    max_metadata_bytes: int = Field(16_384, ge=2, description="Largest metadata object, as JSON.")
    working_cap: int = Field(
        50, ge=1, description="Working-layer entries kept per project+session."
    )
    max_limit: int = Field(100, ge=1, description="Largest `limit` a read tool accepts.")


class ConversationPolicy(BaseModel):
    """When conversation memory compresses, and how far (every field can be set per session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    auto_compress: bool = Field(
        True,
        description="Compress older entries automatically when a threshold below is crossed; "
        "false: only `compress_session` compresses (the Q&A fold still applies).",
    )
    compress_token_threshold: int = Field(
        50_000, ge=1, description="Compress when a session's active tokens exceed this."
    )
    compress_entry_limit: int = Field(
        100, ge=1, description="Compress when a session's active entries exceed this."
    )
    recent_window: int = Field(
        10, ge=0, description="Newest entries never compressed (kept word for word)."
    )
    min_compress_entries: int = Field(
        5, ge=1, description="Fewest eligible entries worth one summary."
    )
    target_ratio: float = Field(
        0.3, gt=0, le=1, description="Summary length asked for, as a share of the original tokens."
    )
    max_active_exchanges: int = Field(
        10, ge=1, description="Finalised Q&A exchanges kept whole; older fold into the summary."
    )
    answer_shorten_over: int = Field(
        750, ge=1, description="An exchange's answer longer than this many bytes is shortened."
    )
    answer_shorten_to: int = Field(
        500, ge=1, description="About how many bytes a shortened answer keeps."
    )
    qa_summary_over: int = Field(
        4096, ge=1, description="The folded Q&A summary is compressed above this many bytes."
    )
    qa_summary_to: int = Field(3072, ge=1, description="About how many bytes it is compressed to.")
    client_summary_grace: int = Field(
        10,
        ge=0,
        description="Entries a client may add after being asked to write a summary before the "
        "server writes a fallback summary itself.",
    )
    max_entry_chars: int = Field(
        200_000, ge=1, description="Longest entry content accepted (file context included)."
    )
    summary_request_entry_bytes: int = Field(
        2_000,
        ge=200,
        description="Each entry in a summary request sent to the client is cut to about this "
        "many bytes (the whole entries are read with `read_summary_request`).",
    )
    summary_request_bytes: int = Field(
        16_000,
        ge=1_000,
        le=1_000_000,
        description="Largest transcript in a summary request, and the page size of "
        "`read_summary_request`, in bytes.",
    )

    @model_validator(mode="after")
    def _shrinks(self) -> ConversationPolicy:
        if self.answer_shorten_to >= self.answer_shorten_over:
            raise ValueError("answer_shorten_to must be below answer_shorten_over")
        if self.qa_summary_to >= self.qa_summary_over:
            raise ValueError("qa_summary_to must be below qa_summary_over")
        return self


class PressurePolicy(BaseModel):
    """The storage cap: most memories a project keeps, and which ones make room (issue 33.4).

    Off by default (`max_memories` unset). Why not a generous default: the only rows a cap may
    delete are ones the weekly prune already deletes by age (EXPIRED) unless `evict_archived`
    is set, so a default cap would change little but surprise the user whose memories vanish;
    an operator with a disk budget chooses the number. A count, not bytes: the kept counters
    (migration 0006) make it exact and cheap to read on every write on both backends, whereas
    neither SQLite nor PostgreSQL gives space back to the disk when rows are deleted.
    """

    model_config = ConfigDict(frozen=True)

    max_memories: int | None = Field(
        None,
        ge=1,
        description="Most memories one project keeps (every layer; superseded history and "
        "pinned ones count). Over it, a write or the daily maintenance deletes the least "
        "valuable EXPIRED ones (fewest uses, then longest unused) until the project is back "
        "to `low_water` of it. Unset (default): no cap.",
    )
    evict_archived: bool = Field(
        False,
        description="Also delete ARCHIVED memories (least used first) when the EXPIRED ones "
        "are not enough. ACTIVE, RECENT and pinned memories are never deleted by the cap.",
    )
    low_water: float = Field(
        0.95,
        gt=0,
        le=1,
        description="Share of `max_memories` enforcement brings a project back to, so that a "
        "project writing at its cap is not trimmed again after every write.",
    )
    warn_share: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Share of `max_memories` from which stats and health say the cap is near.",
    )

    def target(self) -> int | None:
        """How many memories enforcement leaves a project over the cap with (None: no cap)."""
        if self.max_memories is None:
            return None
        return max(int(self.max_memories * self.low_water), 1)
