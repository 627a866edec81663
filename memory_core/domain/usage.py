"""Whether a session used a memory it was shown (pure).

A memory shown to the model (in the session-start context or for a prompt) counts as used only
when the transcript shows the model acting on it afterwards:

- a tool call names it: its id (`"memory_id": 12`, `#12`) or, for a keyed memory, its key;
- or one piece of the model's own output (an answer's text, or a tool call's input) holds at
  least `MIN_SHARED` of the memory's distinctive words and at least `MIN_SHARE` of them
  (distinctive: four letters or more, not a common word; at most the first
  `MAX_WORDS` of them, so a long memory is judged by its gist).

Shown and ignored is not a use: such a memory ages like any other. The time of use is the
timestamp of the first output that shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime

from memory_core.domain.models import Memory
from memory_core.domain.transcript import TranscriptEntry

__all__ = ["MAX_WORDS", "MIN_SHARE", "MIN_SHARED", "uses"]

MIN_SHARED = 3
MIN_SHARE = 0.5
MAX_WORDS = 12
_WORD = re.compile(r"[^\W_]+")
_COMMON_TEXT = (
    "that this with from have were will would could should their there about which when what "
    "your they them then than into only also been being some more most such very just over "
    "because after before these those here where while does done make made like need needs "
    "want using used uses user users file files code line lines call calls tool tools"
)
_COMMON = frozenset(_COMMON_TEXT.split())


def _distinctive(text: str) -> list[str]:
    words = [w for w in _WORD.findall(text.casefold()) if len(w) >= 4 and w not in _COMMON]
    return list(dict.fromkeys(words))[:MAX_WORDS]


def _output_of(entry: TranscriptEntry) -> str | None:
    """The model's own output in an entry: an answer's text or a tool call's input."""
    if entry.kind == "assistant":
        return entry.text
    if entry.kind == "tool_call":
        return f"{entry.tool_name or ''} " + json.dumps(entry.arguments or {}, ensure_ascii=False)
    return None


def _names(memory: Memory, entry: TranscriptEntry, output: str) -> bool:
    if entry.kind != "tool_call":
        return False
    args = entry.arguments or {}
    if any(args.get(k) == memory.id for k in ("memory_id", "id")):
        return True
    if re.search(rf"#{memory.id}\b", output):
        return True
    return memory.key is not None and memory.key in args.values()


def uses(
    shown: Iterable[Memory], entries: Sequence[TranscriptEntry], fallback: datetime
) -> dict[int, datetime]:
    """The memories of `shown` that `entries` use, each with the time of its first use.

    `fallback` is the time of a use whose entry carries no timestamp.
    """
    outputs = [(e, o) for e in entries if (o := _output_of(e)) is not None]
    found: dict[int, datetime] = {}
    for memory in shown:
        wanted = _distinctive(f"{memory.key}: {memory.content}" if memory.key else memory.content)
        for entry, output in outputs:
            words = set(_WORD.findall(output.casefold()))
            shared = sum(1 for w in wanted if w in words)
            enough = shared >= MIN_SHARED and shared >= MIN_SHARE * len(wanted)
            if enough or _names(memory, entry, output):
                found[memory.id] = entry.at or fallback
                break
    return found
