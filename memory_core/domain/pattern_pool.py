"""The k-tenant rule of shared patterns: which anonymised sentences may leave their tenants.

Input: the anonymised sentences ("passages") of the opted-in tenants only, with unit vectors
of one model. Two passages of different tenants *match* when both hold:

- **meaning**: their cosine is at least `similarity` (calibrated on labelled pairs with the
  default model, docs/business_context.md);
- **words**: each holds at least `word_overlap` of the other's content words (the same-word
  rule of search: equal, a prefix, or one stem), so a passage that merely shares a topic
  ("clients in healthcare want X" / "clients in retail want Y") does not match.

A passage P of tenant T is *held* by T and by every other tenant with a passage matching P.
P is published when:

1. at least `min_tenants` (k) tenants hold it, and
2. every content word of P is written, in the matching passage, by at least k of those
   tenants. So a shared text carries no word that fewer than k tenants wrote: not a
   stray lower-case name, not the one word a near miss changed ("want" / "reject").

Among published passages that match one another only one is kept (the one held by the most
tenants, then the closest to its holders), so one pattern is shared once. Everything here is
pure; the caller bounds the input (passages per tenant), and each passage keeps at most
`neighbours` candidate matches, so the work is O(P^2 * dims) for the products and O(P *
neighbours) for the word checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_core.domain.anonymise import pattern_words
from memory_core.domain.match import word_share

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["PoolPassage", "PoolRule", "PooledPattern", "holds", "pool_patterns"]


@dataclass(frozen=True)
class PoolPassage:
    """An anonymised sentence of one opted-in tenant."""

    id: int
    tenant: str
    text: str


@dataclass(frozen=True)
class PoolRule:
    """The thresholds of the k-tenant rule."""

    min_tenants: int
    similarity: float
    word_overlap: float
    neighbours: int = 64
    block: int = 512


@dataclass(frozen=True)
class PooledPattern:
    """A published pattern: its text is passage `passage_id`'s; `holders` stay private."""

    passage_id: int
    text: str
    holders: tuple[tuple[str, int], ...]  # (tenant, its matching passage), the first is ours
    similarity: float  # mean cosine of the representative to the other holders' passages


def holds(a: str, b: str, cosine: float, rule: PoolRule) -> bool:
    """Whether passages `a` and `b` (of different tenants) match by meaning and words."""
    if cosine < rule.similarity:
        return False
    return (
        word_share(pattern_words(a), b) >= rule.word_overlap
        and word_share(pattern_words(b), a) >= rule.word_overlap
    )


def _neighbours(
    passages: Sequence[PoolPassage], vectors: npt.NDArray[np.float32], rule: PoolRule
) -> list[dict[str, tuple[int, float]]]:
    """For each passage: tenant -> (index, cosine) of its best match in that tenant."""
    import numpy as np

    tenants = np.array([p.tenant for p in passages], dtype=object)
    found: list[dict[str, tuple[int, float]]] = [{} for _ in passages]
    for begin in range(0, len(passages), rule.block):
        sims = vectors[begin : begin + rule.block] @ vectors.T
        for row, scores in enumerate(sims):
            i = begin + row
            above = np.flatnonzero((scores >= rule.similarity) & (tenants != passages[i].tenant))
            if above.size > rule.neighbours:
                above = above[np.argsort(-scores[above], kind="stable")[: rule.neighbours]]
            for j in sorted(int(x) for x in above):
                cosine = float(scores[j])
                t = passages[j].tenant
                if t in found[i] and found[i][t][1] >= cosine:
                    continue
                if holds(passages[i].text, passages[j].text, cosine, rule):
                    found[i][t] = (j, cosine)
    return found


def _every_word_held(text: str, holders: Sequence[str], k: int) -> bool:
    """Whether each content word of `text` is written by at least k of the holders' texts."""
    return all(sum(word_share([w], h) == 1.0 for h in holders) >= k for w in pattern_words(text))


def pool_patterns(
    passages: Sequence[PoolPassage], vectors: npt.NDArray[np.float32], rule: PoolRule
) -> list[PooledPattern]:
    """The patterns the k-tenant rule lets out, most widely held first.

    Args:
        passages: Anonymised sentences of opted-in tenants (nobody else's may be passed).
        vectors: Row i is the unit vector of passages[i].
        rule: k, the thresholds and the bounds.
    """
    if len(passages) == 0:
        return []
    best = _neighbours(passages, vectors, rule)
    k = rule.min_tenants
    candidates: list[tuple[int, float, int]] = []
    for i, matches in enumerate(best):
        if len(matches) + 1 < k:
            continue
        texts = [passages[i].text, *(passages[j].text for j, _ in matches.values())]
        if _every_word_held(passages[i].text, texts, k):
            mean = sum(c for _, c in matches.values()) / max(1, len(matches))
            candidates.append((i, mean, len(matches)))
    candidates.sort(key=lambda c: (-c[2], -c[1], passages[c[0]].id))
    taken: set[int] = set()
    out: list[PooledPattern] = []
    for i, mean, _ in candidates:
        group = {i, *(j for j, _ in best[i].values())}
        if group & taken:
            continue  # the same pattern, already published through another passage
        # A same-tenant near duplicate of a published passage matches the same passages
        # of the other tenants, so it is skipped above.
        taken |= group
        others = sorted((t, passages[j].id) for t, (j, _) in best[i].items())
        holders = ((passages[i].tenant, passages[i].id), *others)
        out.append(
            PooledPattern(
                passage_id=passages[i].id,
                text=passages[i].text,
                holders=holders,
                similarity=round(mean, 6),
            )
        )
    return out
