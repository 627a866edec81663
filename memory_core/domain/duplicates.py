"""When two memories state the same fact: normalised identity and near duplicates (pure).

A write whose text is the same as a stored memory's after `normalise` (Unicode NFKC, case,
runs of whitespace, trailing punctuation) is that memory. A *near* duplicate is decided from
three things, none of which needs an LLM:

- the cosine similarity of the two texts' vectors (the embedder's);
- the overlap of their content words (function words left out, a crude stem so "commits"
  and "committing" meet);
- their *anchors*: numbers (versions, ports, sizes, times), dates (month and weekday names,
  "today", "yesterday"), names (capitalised words inside a sentence, identifiers such as
  `Fly.io`, `snake_case`, `camelCase`, paths) and negation. Two texts whose anchors differ
  are never duplicates however close they are: "the API listens on port 8080" and "... 8081",
  "we deploy on Fly.io" and "... on AWS", "run the migrations" and "do not run the
  migrations" are different facts.

The thresholds (`DuplicateThresholds`) were calibrated on the developer-memory pairs of
tests/duplicate_pairs.py with all-MiniLM-L6-v2 (int8 ONNX), see docs/truth.md: near duplicates
(retries, paraphrases) there have cosine >= 0.86 and word overlap >= 0.5, while the closest
different-fact pair whose anchors agree has cosine 0.82 or overlap below 0.5. Pairs just below
the duplicate band (cosine >= `candidate_similarity`) are *candidates*: an append names them
("may supersede #12") and the model confirms with one call; nothing is merged on a guess.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memory_core.domain.fts_query import STOPWORDS

__all__ = [
    "DuplicateThresholds",
    "Resemblance",
    "anchors",
    "compare",
    "content_words",
    "fold_newest",
    "lowered_words",
    "newest_first",
    "normalise",
    "normalised_hash",
    "restates",
    "word_overlap",
]

_SPACE = re.compile(r"\s+")
# Trailing marks a retry or a hand edit adds or drops ("Use pnpm." / "Use pnpm"); inner
# punctuation is kept: "v1.2" and "v12" are different versions.
_TRAILING = re.compile(r"[\s.!?;:,…。]+$")
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")
_TOKEN = re.compile(r"\S+")
_NUMBER = re.compile(r"\d+(?:[.,:/x-]\d+)*")
_NEGATION_TEXT = (
    "not no never none nothing nobody nowhere neither nor without cannot stop avoid "
    "don't doesn't didn't isn't aren't wasn't weren't won't wouldn't shouldn't couldn't "
    "can't hasn't haven't hadn't mustn't needn't"
)
_NEGATIONS = frozenset(_NEGATION_TEXT.split())
_DAY_TEXT = (
    "january february march april june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday today tomorrow yesterday tonight weekend"
)
_DAY_WORDS = frozenset(_DAY_TEXT.split())
# Numbers spelled out count as numbers: "two approvals" and "three approvals" differ.
_NUMBER_TEXT = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion once twice thrice half double triple "
    "first second third fourth fifth single dozen"
)
_NUMBER_WORDS = frozenset(_NUMBER_TEXT.split())
# A token that names something by its shape: an inner capital (camelCase, iOS), an inner dot,
# slash or underscore (Fly.io, src/app.py, snake_case), or an @/# handle.
_IDENTIFIER = re.compile(r"^[@#]?\w*(?:[a-z][A-Z]|[./_\\]\w|[A-Z]{2,})")
_EDGE = "\"'`()[]{}<>,;:!?*"
_SENTENCE_END = (".", "!", "?", ":", ";")


def normalise(text: str) -> str:
    """The text a duplicate is recognised by: NFKC, case-folded, single spaces, no end mark.

    "Use  PNPM, not npm." and "use pnpm, not npm" normalise alike; "use pnpm not npm" does not
    (the comma is inner punctuation, kept so numbers and identifiers keep their shape).
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", folded).strip())


def normalised_hash(text: str) -> str:
    """The identity of an unkeyed memory's text up to `normalise` (sha256, hex)."""
    return hashlib.sha256(normalise(text).encode()).hexdigest()


# Irregular past forms people write facts in ("the frontend is built with Vite", "Bob took it
# over"): a question asks in the present ("what builds the frontend?").
_IRREGULAR_TEXT = (
    "built:build ran:run went:go gone:go wrote:write written:write took:take taken:take "
    "made:make kept:keep sent:send found:find held:hold broke:break broken:break "
    "chose:choose chosen:choose began:begin begun:begin got:get gotten:get gave:give "
    "given:give paid:pay sold:sell bought:buy brought:bring thought:think told:tell "
    "led:lead spent:spend lost:lose met:meet"
)
_IRREGULAR = dict(pair.split(":") for pair in _IRREGULAR_TEXT.split())


def _stem(word: str) -> str:
    """A crude English stem, enough for "commit/commits/committed/committing" to meet."""
    word = _IRREGULAR.get(word, word)
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        word = word[:-2]
    else:
        for suffix in ("ing", "ed", "s"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
                word = word[: -len(suffix)]
                break
    # "committ" (from committing) and "commit": a doubled last consonant is one.
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    # "use", "uses", "used" and "using" all end as "us".
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def lowered_words(text: str) -> list[str]:
    """A text's words, NFKC-normalised and lowered, with typographic apostrophes made plain."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    return [w.replace("\u2019", "'") for w in _WORD.findall(lowered)]


@functools.lru_cache(maxsize=512)
def content_words(text: str) -> frozenset[str]:
    """A text's content words (function words and negations left out), stemmed.

    Cached: search compares every pair of its hits (`fold_newest`, domain.corrections), so
    the same few texts are split again and again. A search holds at most a few dozen hits,
    so a small cache serves it; a large one would only hold texts in a long-running server.
    """
    words = lowered_words(text)
    content = frozenset(_stem(w) for w in words if w not in STOPWORDS and w not in _NEGATIONS)
    return content or frozenset(_stem(w) for w in words)


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' stemmed content words, in [0, 1]."""
    left, right = content_words(a), content_words(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


@functools.lru_cache(maxsize=512)
def anchors(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], bool]:
    """(numbers, day words, names, negated) of a text: what two duplicates must share.

    Numbers are digits (versions, ports, times) and numbers spelled out ("two", "twice").
    """
    text = unicodedata.normalize("NFKC", text)
    lowered = lowered_words(text)
    numbers = frozenset(_NUMBER.findall(text)) | {w for w in lowered if w in _NUMBER_WORDS}
    days = frozenset(w for w in lowered if w in _DAY_WORDS)
    negated = sum(1 for w in lowered if w in _NEGATIONS or w.endswith("n't")) % 2 == 1
    names: set[str] = set()
    start = True
    for raw in _TOKEN.findall(text):
        token = raw.strip(_EDGE)
        bare = token.rstrip(".")
        named = bool(_IDENTIFIER.match(bare)) or (not start and bare[:1].isupper())
        if bare and named and not _NUMBER.fullmatch(bare):
            names.add(bare.lower())
        start = raw.endswith(_SENTENCE_END) and not _IDENTIFIER.match(bare or "x")
    return numbers, days, frozenset(names), negated


@dataclass(frozen=True)
class DuplicateThresholds:
    """Where a resemblance becomes a duplicate, or a candidate to supersede (docs/truth.md)."""

    # Cosine similarity at or above which two texts with the same anchors may be duplicates.
    duplicate_similarity: float = 0.87
    # Share of content words (Jaccard) they must also have in common.
    duplicate_overlap: float = 0.5
    # Cosine at or above which a memory is named as one a new one may supersede.
    candidate_similarity: float = 0.65


@dataclass(frozen=True)
class Resemblance:
    """How a new text relates to a stored one: `duplicate`, `candidate` or `distinct`."""

    kind: Literal["duplicate", "candidate", "distinct"]
    similarity: float
    overlap: float
    # Why a close pair is not a duplicate ("number", "date", "name", "negation"), if so.
    differs_in: str | None = None


def _anchor_difference(a: str, b: str) -> str | None:
    (nums_a, days_a, names_a, neg_a), (nums_b, days_b, names_b, neg_b) = anchors(a), anchors(b)
    if nums_a != nums_b:
        return "number"
    if days_a != days_b:
        return "date"
    # A name capitalised in one text may open a sentence (uncapitalised as a name) in the
    # other: it differs only when the other text does not hold it at all.
    words_a, words_b = _lower_tokens(a), _lower_tokens(b)
    if (names_a - words_b) or (names_b - words_a):
        return "name"
    if neg_a != neg_b:
        return "negation"
    return None


def _lower_tokens(text: str) -> set[str]:
    tokens = (
        t.strip(_EDGE).rstrip(".") for t in _TOKEN.findall(unicodedata.normalize("NFKC", text))
    )
    return {t.lower() for t in tokens if t}


def compare(new: str, old: str, similarity: float, thresholds: DuplicateThresholds) -> Resemblance:
    """Whether `new` restates `old` (given their vectors' cosine `similarity`)."""
    if normalise(new) == normalise(old):
        return Resemblance(kind="duplicate", similarity=1.0, overlap=1.0)
    overlap = word_overlap(new, old)
    differs = _anchor_difference(new, old)
    if (
        differs is None
        and similarity >= thresholds.duplicate_similarity
        and overlap >= thresholds.duplicate_overlap
    ):
        return Resemblance(kind="duplicate", similarity=similarity, overlap=overlap)
    if similarity >= thresholds.candidate_similarity:
        return Resemblance(
            kind="candidate", similarity=similarity, overlap=overlap, differs_in=differs
        )
    return Resemblance(kind="distinct", similarity=similarity, overlap=overlap, differs_in=differs)


def restates(a: str, b: str, similarity: float, thresholds: DuplicateThresholds) -> bool:
    """Whether two texts say one thing in versions: close by meaning and by words.

    Unlike a duplicate, anchors may differ: "JWTs expire after 15 minutes" and "... 60
    minutes" are two versions of one fact, and a result list shows the newer (`fold_newest`).
    """
    return (
        similarity >= thresholds.duplicate_similarity
        and word_overlap(a, b) >= thresholds.duplicate_overlap
    )


def fold_newest(
    texts: Sequence[str],
    ages: Sequence[tuple[datetime, int]],
    similarity: Callable[[int, int], float | None],
    thresholds: DuplicateThresholds,
) -> tuple[list[int], dict[int, int]]:
    """Fold versions of one fact in a ranked list, keeping the newest in the best place.

    `texts` and `ages` ((created_at, id)) are the ranked items'; `similarity(i, j)` their
    cosine (None when unknown: never folded). Returns the indices to keep, in ranked order,
    each cluster's newest item standing where its best-ranked member stood, and how many
    older items each kept index folded away.
    """
    cluster = list(range(len(texts)))  # each item's cluster head (its best-ranked member)
    for j in range(1, len(texts)):
        for i in range(j):
            if cluster[i] != i:
                continue
            sim = similarity(i, j)
            if sim is not None and restates(texts[i], texts[j], sim, thresholds):
                cluster[j] = i
                break
    kept: list[int] = []
    folded: dict[int, int] = {}
    for head in range(len(texts)):
        if cluster[head] != head:
            continue
        members = [k for k in range(len(texts)) if cluster[k] == head]
        newest = max(members, key=lambda k: ages[k])
        kept.append(newest)
        if len(members) > 1:
            folded[newest] = len(members) - 1
    return kept, folded


def newest_first(
    ages: Sequence[tuple[datetime, int]],
    similarity: Callable[[int, int], float | None],
    threshold: float,
) -> list[int]:
    """Ranked items reordered so that, among items close to one another, the newest leads.

    Items at `threshold` similarity or more (a correction and what it corrects, even written
    without `supersedes`) form a cluster; the cluster keeps the places its members held, newest
    in the best of them. Other items do not move. Returns the indices in their new order.
    """
    cluster = list(range(len(ages)))
    for j in range(1, len(ages)):
        for i in range(j):
            sim = similarity(i, j)
            if cluster[i] == i and sim is not None and sim >= threshold:
                cluster[j] = i
                break
    order = list(range(len(ages)))
    for head in range(len(ages)):
        members = [k for k in range(len(ages)) if cluster[k] == head]
        if len(members) > 1:
            for place, k in zip(
                members, sorted(members, key=lambda k: ages[k], reverse=True), strict=True
            ):
                order[place] = k
    return order
