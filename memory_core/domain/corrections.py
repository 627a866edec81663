"""When a newer memory reads as a correction of an older one, below the cosine band (pure).

A correction written without `supersedes` is found by its vector when it is close to what it
corrects (cosine >= `DuplicateThresholds.candidate_similarity`). Many are not: under MiniLM
"We deploy the backend to Fly.io." / "Backend deploys now go to AWS." is 0.62 and "Errors are
reported to Sentry." / "Error reporting moved to Rollbar." 0.39, while two different facts
about one subject reach 0.72 ("Access tokens expire after 15 minutes." / "Refresh tokens now
live for 30 days."). No cosine separates them, so more signals must agree:

- they are loosely close by meaning (cosine >= `LOOSE_SIMILARITY`);
- they share their subject: at a question, each holds much the same words of it (the hook's
  prompt "Where do we deploy the backend?": both say "deploy" and "backend", where "Refresh
  tokens now live..." lacks "access" of "When do access tokens expire?"); at a write, they
  share a content word beside the change words;
- the newer replaces a value of the older, in one of three ways:
  - it says the older's sentence with its value changed ("... built with Vite" after "...
    built with webpack"; "Fly.io" -> "Render");
  - it announces a change in the words people use for one ("moved", "switched", "renamed",
    "no longer", "took over") and names a new value: a number, a date or a name the older
    lacks, the word the change goes *to* ("renamed the default branch to trunk"), or a
    capitalised first word ("Chen took over ...");
  - it only says "now" (or "from now on", "as of"), which opens additions as often as
    corrections ("Backend deploys now need approval from Dana."), and its new value stands
    where the older's stood: after the same word ("now go to AWS" / "deploy ... to Fly.io").

What it decides is only ever an order or a suggestion: search puts the newer first, the
prompt hook shows the newer alone, an append names the older as one it "may supersede".
Nothing is superseded without the model's confirmation (docs/truth.md). bench.stale_facts
counts the cost beside the gain: additions about the same subject taken for versions.
"""

from __future__ import annotations

import re
import unicodedata

from memory_core.domain.duplicates import anchors, content_words, lowered_words
from memory_core.domain.fts_query import STOPWORDS

__all__ = ["LOOSE_SIMILARITY", "announces_change", "corrects", "may_correct", "replaces_value"]

# The floor under which two texts are not taken for versions whatever their words: the true
# corrections of bench.stale_facts reach 0.385 at their lowest; unrelated sentences sharing
# one word (the lookalikes there, "We moved uptime alerts to PagerDuty." against "Errors are
# reported to Sentry.") sit at 0.26-0.34.
LOOSE_SIMILARITY = 0.35


def _stems(words: str) -> frozenset[str]:
    """Words as duplicates.content_words stems them ("moved", "moves" -> "mov")."""
    return frozenset().union(*(content_words(w) for w in words.split()))


# Words that say a fact was replaced.
_STRONG = _stems(
    "anymore instead switched moved migrated upgraded downgraded renamed replaced changed "
    "updated became corrected correction actually"
)
_STRONG_PHRASES = ("no longer", "took over", "take over", "taken over")
# Words that say a fact holds from some time on: as often an addition as a correction.
_WEAK = _stems("now nowadays henceforth")
_WEAK_PHRASES = ("as of", "going forward")
_CUES = _STRONG | _WEAK | _stems(" ".join(_STRONG_PHRASES + _WEAK_PHRASES))
# Verbs too general to name a subject: "Which package manager does the monorepo use?" asks
# about the monorepo, and "We migrated the monorepo to pnpm." need not say "use".
_GENERIC = _stems("use uses run runs need needs make makes get gets take takes keep keeps")
# The last word of a sentence after "to": where a change went ("... moved to trunk.").
_TARGET = re.compile(r"\bto\s+([^\W_][\w.-]*?)[\s.!;]*$", re.IGNORECASE)


def _spaced(text: str) -> str:
    return " " + " ".join(lowered_words(text)) + " "


def announces_change(text: str) -> str | None:
    """How a text says that something changed, if it does.

    "strong" when it says something was replaced ("we moved to AWS"), "weak" when it only says
    what holds from now on ("tokens now live for 30 minutes"), else None.
    """
    words, spaced = content_words(text), _spaced(text)
    if words & _STRONG or any(f" {p} " in spaced for p in _STRONG_PHRASES):
        return "strong"
    if words & _WEAK or any(f" {p} " in spaced for p in _WEAK_PHRASES):
        return "weak"
    return None


def _subject(text: str) -> frozenset[str]:
    return content_words(text) - _CUES - _GENERIC


def _values(text: str, other: str) -> list[str]:
    """The numbers, dates and names of `text` that `other` does not hold."""
    numbers, days, names, _ = anchors(text)
    held = other.lower()
    return [v for v in numbers | days | names if v.lower() not in held]


def _swapped(newer: str, older: str) -> bool:
    """Whether the two say one sentence with its value changed ("... built with Vite")."""
    a, b = content_words(newer), content_words(older)
    if len(a - b) == 1 and len(b - a) == 1:
        return True

    def bare(text: str, words: frozenset[str]) -> frozenset[str]:
        numbers, days, names, _ = anchors(text)
        return words - content_words(" ".join(numbers | days | names))

    return bool(a ^ b) and bare(newer, a) == bare(older, b)


def _new_value(newer: str, older: str) -> bool:
    """Whether `newer` names a value `older` does not (see the module)."""
    if _values(newer, older):
        return True
    text = unicodedata.normalize("NFKC", newer)
    target = _TARGET.search(text)
    if target is not None and target.group(1).lower() not in older.lower():
        return True
    # anchors() cannot tell a name opening a sentence from any word that does.
    words = lowered_words(text)
    return (
        bool(words)
        and text.lstrip()[:1].isupper()
        and words[0] not in STOPWORDS
        and bool(content_words(words[0]) - content_words(older) - _CUES)
    )


def _before(text: str, value: str) -> str | None:
    """The word just before `value` in `text` ("to" in "now go to AWS")."""
    found = re.search(r"([^\W_]+)\W+" + re.escape(value) + r"(?!\w)", text, re.IGNORECASE)
    return found.group(1).lower() if found else None


def _same_place(newer: str, older: str) -> bool:
    """Whether a new value of `newer` follows the word an old value of `older` follows."""
    olds = {_before(older, v) for v in _values(older, newer)} - {None}
    return any(_before(newer, v) in olds for v in _values(newer, older))


def replaces_value(newer: str, older: str) -> bool:
    """Whether `newer` states a value `older` does not, or says its sentence with another.

    Two close texts (cosine in the candidate band) are versions of one fact only then: "The
    default branch is now protected." (0.70 to "The default branch is master.") adds to the
    subject and corrects nothing.
    """
    return _swapped(newer, older) or _new_value(newer, older)


def _changes(newer: str, older: str) -> bool:
    if _swapped(newer, older):
        return True
    cue = announces_change(newer)
    if cue == "strong":
        return _new_value(newer, older)
    return cue == "weak" and _same_place(newer, older)


def corrects(newer: str, older: str, similarity: float, question: str) -> bool:
    """Whether, for `question`, `newer` reads as a correction of `older` (see the module).

    Both must hold much the same words of the question (at least one, two thirds of those
    either holds): a newer text about another part of the subject ("Refresh tokens now ..."
    for a question on access tokens) is not a version of the older one.
    """
    if similarity < LOOSE_SIMILARITY:
        return False
    asked = _subject(question)
    in_newer, in_older = asked & _subject(newer), asked & _subject(older)
    if not in_newer or 3 * len(in_newer & in_older) < 2 * len(in_newer | in_older):
        return False
    return _changes(newer, older)


def may_correct(newer: str, older: str, similarity: float) -> bool:
    """Whether a new text may correct a stored one: named to the model, which confirms.

    As `corrects` without a question: the two must share a word of their subject.
    """
    if similarity < LOOSE_SIMILARITY or not _subject(newer) & _subject(older):
        return False
    return _changes(newer, older)
