"""The deterministic summaries that replace compacted entries."""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.domain.models import Memory

__all__ = ["CHUNK", "chunk_entries", "summarize_entries"]

CHUNK = 50  # entries per summary: keeps each summary readable and its metadata small
_EXCERPT_MAX = 160
_EXCERPT_MIN = 16
_LINE_OVERHEAD = len("- 2026-01-01 00:00: ") + 1


def chunk_entries(entries: Sequence[Memory], size: int = CHUNK) -> list[list[Memory]]:
    """Entries oldest first, in runs of at most `size`."""
    ordered = sorted(entries, key=lambda m: (m.created_at, m.id))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def summarize_entries(entries: Sequence[Memory], *, max_chars: int) -> str:
    """Write "[Summary of N entries]" followed by one excerpt per entry, oldest first.

    Each entry's excerpt is sized so that every entry gets its line within `max_chars`; only a
    limit too small for even the shortest excerpts truncates the end.
    """
    header = f"[Summary of {len(entries)} entries]"
    if entries:
        # The id range makes every summary's text unique, so two chunks never deduplicate.
        ids = sorted(m.id for m in entries)
        header += f"\n(ids {ids[0]}-{ids[-1]})"
    share = (max_chars - len(header)) // max(len(entries), 1) - _LINE_OVERHEAD
    excerpt = max(_EXCERPT_MIN, min(_EXCERPT_MAX, share))
    lines = [header]
    for entry in sorted(entries, key=lambda m: (m.created_at, m.id)):
        text = " ".join(entry.content.split())
        if len(text) > excerpt:
            text = text[: excerpt - 1] + "…"
        lines.append(f"- {entry.created_at:%Y-%m-%d %H:%M}: {text}")
    summary = "\n".join(lines)
    if len(summary) > max_chars:
        summary = summary[: max_chars - 1] + "…"
    return summary
