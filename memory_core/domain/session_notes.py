"""A session's scratchpad snippets as part of what a conversation summary is written from.

The scratchpad holds what the agent judged worth keeping in a session (a correction, a
preference, a fact); a summary of that session's conversation should not lose it. Both forms
are bounded, so 64 snippets of 2,000 characters cannot swamp a summary or its request.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.domain.condense import shorten_bytes

__all__ = ["NOTES_MAX_BYTES", "notes_digest", "notes_transcript"]

NOTES_MAX_BYTES = 2_000


def notes_transcript(notes: Sequence[str], max_bytes: int = NOTES_MAX_BYTES) -> str:
    """A block appended to the transcript a summarizer reads ("" without notes)."""
    if not notes:
        return ""
    head = "\n\nScratchpad notes of this session (keep what still matters):"
    lines, used = [head], len(head.encode())
    for note in notes:
        line = "\n- " + shorten_bytes(" ".join(note.split()), 300)
        if used + len(line.encode()) > max_bytes:
            break
        lines.append(line)
        used += len(line.encode())
    return "".join(lines) if len(lines) > 1 else ""


def notes_digest(digest: str, notes: Sequence[str], max_bytes: int) -> str:
    """The fallback digest with the notes after it, all within `max_bytes`.

    The notes take at most a third of the budget (the digest is shortened to make room),
    so the entries' own gist stays the larger part.
    """
    if not notes:
        return shorten_bytes(digest, max_bytes)
    joined = " | ".join(" ".join(n.split()) for n in notes)
    tail = "; scratchpad notes: " + shorten_bytes(joined, max(40, max_bytes // 3))
    return shorten_bytes(digest, max(0, max_bytes - len(tail.encode()))) + tail
