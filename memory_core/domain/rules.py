"""When does a procedural rule's condition apply to a situation?"""

from __future__ import annotations

import re

__all__ = ["condition_phrase", "rule_applies"]

_WORD = re.compile(r"[^\W_]+")
_SUFFIXES = ("ing", "ed", "es", "s")
# Function words, and the words that open a condition ("before you merge" is about merging).
_STOP = frozenset(
    {"a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "is", "it", "when"}
    | {"whenever", "before", "after", "if", "you", "we", "i", "be", "are", "do"}
)


def _stems(text: str) -> set[str]:
    words: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                # "committing" -> "committ" -> "commit", "running" -> "run".
                if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                    word = word[:-1]
                break
        # "change", "changed" and "changing" are one stem: a final silent e goes too.
        if len(word) > 4 and word.endswith("e"):
            word = word[:-1]
        words.add(word)
    return words


def rule_applies(condition: str, situation: str, *, min_overlap: float = 0.5) -> bool:
    """True when at least `min_overlap` of the condition's content words occur in the situation.

    A keyword index finds candidates that share *any* word; this keeps only the rules whose
    condition is mostly present, so "user.name" does not trigger every rule mentioning users.
    """
    wanted = _stems(condition)
    if not wanted:
        return condition.strip().lower() == situation.strip().lower()
    return len(wanted & _stems(situation)) / len(wanted) >= min_overlap


_OPENERS = ("when ", "whenever ", "before ", "after ", "if ", "once ", "while ")


def condition_phrase(condition: str) -> str:
    """A rule's condition as it reads in a line: "when X", or X when it opens with such a word.

    So "before committing" reads "before committing", not "when before committing".
    """
    return condition if condition.casefold().startswith(_OPENERS) else f"when {condition}"
