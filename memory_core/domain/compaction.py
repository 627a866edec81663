"""The deterministic summary that replaces compacted entries."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.domain.models import Memory

__all__ = ["summarize_entries"]

_EXCERPT_CHARS = 160


def summarize_entries(entries: Sequence[Memory], *, max_chars: int) -> str:
    """Write "[Summary of N entries]" followed by one excerpt per entry, oldest first.

    The text is cut to `max_chars` so the summary itself always fits the content limit.
    """
    header = f"[Summary of {len(entries)} entries]"
    lines = [header]
    for entry in sorted(entries, key=lambda m: (m.created_at, m.id)):
        text = " ".join(entry.content.split())
        if len(text) > _EXCERPT_CHARS:
            text = text[: _EXCERPT_CHARS - 1] + "…"
        lines.append(f"- {entry.created_at:%Y-%m-%d %H:%M}: {text}")
    summary = "\n".join(lines)
    if len(summary) > max_chars:
        summary = summary[: max_chars - 1] + "…"
    return summary
