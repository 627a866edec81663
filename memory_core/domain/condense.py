"""Pure rules of conversation memory: when to compress, what, and how text is laid out."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import JsonValue

from memory_core.config.policies import ConversationPolicy
from memory_core.domain.budget import TokenAllowance
from memory_core.domain.conversation import (
    CachedResult,
    CompressionPlan,
    Entry,
    EntryType,
    Exchange,
    Role,
    Summary,
    canonical_json,
)

__all__ = [
    "ELLIPSIS",
    "FittedContext",
    "cache_key",
    "cached_line",
    "compress_qa_summary",
    "compression_reason",
    "condensed_transcript",
    "fallback_summary",
    "fit_context",
    "fold_line",
    "plan_compression",
    "render_context",
    "render_transcript",
    "shorten_bytes",
    "summarization_prompt",
    "transcript_pages",
]

ELLIPSIS = " …"
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` that fits in `max_bytes` of UTF-8, never splitting a char."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def shorten_bytes(text: str, max_bytes: int) -> str:
    """Cut `text` to about `max_bytes` of UTF-8, at a sentence end if one is near, else a word.

    Returns `text` unchanged when it already fits. The marker " …" is counted in the budget.
    """
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    room = max(1, max_bytes - len(ELLIPSIS.encode("utf-8")))
    head = _utf8_prefix(text, room)
    # Prefer a whole sentence when it keeps at least half of the room; else a whole word.
    ends = [m.end() for m in _SENTENCE_END.finditer(head + " ")]
    if ends and ends[-1] >= len(head) // 2:
        return head[: ends[-1]].rstrip() + ELLIPSIS
    space = head.rfind(" ")
    if space >= len(head) // 2:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def cache_key(tool_name: str, parameters: JsonValue) -> str:
    """The cache identity of a tool call: sha256 of the name and the canonical JSON parameters."""
    return hashlib.sha256(f"{tool_name}\n{canonical_json(parameters)}".encode()).hexdigest()


def compression_reason(
    active_tokens: int, active_entries: int, policy: ConversationPolicy
) -> str | None:
    """Why a session must compress now, or None. Over means strictly over the threshold."""
    if active_tokens > policy.compress_token_threshold:
        return f"active tokens {active_tokens} > {policy.compress_token_threshold}"
    if active_entries > policy.compress_entry_limit:
        return f"active entries {active_entries} > {policy.compress_entry_limit}"
    return None


def plan_compression(
    active: Sequence[Entry], policy: ConversationPolicy, reason: str
) -> CompressionPlan | None:
    """The oldest active entries outside the recent window, if there are enough of them."""
    ordered = sorted(active, key=lambda e: e.id)
    keep = policy.recent_window
    eligible = ordered[: len(ordered) - keep] if keep else ordered
    if len(eligible) < policy.min_compress_entries:
        return None
    return CompressionPlan(entries=tuple(eligible), reason=reason)


def _entry_line(entry: Entry) -> str:
    when = entry.timestamp.strftime("%Y-%m-%d %H:%M")
    match entry.type:
        case EntryType.TOOL_CALL:
            args = canonical_json(entry.arguments) if entry.arguments is not None else "{}"
            body = f"called {entry.tool_name}({args})"
            if entry.content:
                body += f" {entry.content}"
        case EntryType.TOOL_RESULT:
            status = "error" if entry.is_error else "result"
            name = f" of {entry.tool_name}" if entry.tool_name else ""
            body = f"tool {status}{name}: {entry.content}"
        case EntryType.CONTEXT:
            origin = f" from {entry.source}" if entry.source else ""
            body = f"added context{origin}: {entry.content}"
        case _:
            body = entry.content
    return f"[#{entry.id} {when}] {entry.role.value}: {body}"


def render_transcript(entries: Sequence[Entry]) -> str:
    """Entries as one line each, oldest first: what a summarizer reads."""
    return "\n".join(_entry_line(e) for e in entries)


def condensed_transcript(
    entries: Sequence[Entry], *, entry_bytes: int, total_bytes: int
) -> tuple[str, tuple[int, ...]]:
    """The transcript with each entry cut to about `entry_bytes`, all within `total_bytes`.

    When every entry at `entry_bytes` would not fit, the per-entry cap shrinks (to no less
    than 200 bytes) and entries that still do not fit are left out, oldest kept first.

    Returns:
        The text, and the ids of the entries that were shortened or left out.
    """
    if not entries:
        return "", ()
    per = max(200, min(entry_bytes, total_bytes // len(entries) - 1))
    lines: list[str] = []
    cut: list[int] = []
    used = 0
    for e in entries:
        full = _entry_line(e)
        line = shorten_bytes(full, per)
        size = len(line.encode("utf-8")) + (1 if lines else 0)
        if used + size > total_bytes:
            cut.append(e.id)
            continue
        lines.append(line)
        used += size
        if line != full:
            cut.append(e.id)
    return "\n".join(lines), tuple(cut)


def transcript_pages(entries: Sequence[Entry], page_bytes: int) -> list[str]:
    """The whole transcript in pages of at most `page_bytes` of UTF-8.

    A page ends between entries when one ends in its last quarter; otherwise it is full and
    the entry goes on in the next page (never split inside a character).
    """
    text = render_transcript(entries)
    pages: list[str] = []
    while len(text.encode("utf-8")) > page_bytes:
        head = _utf8_prefix(text, page_bytes)
        newline = head.rfind("\n")
        if newline >= len(head) * 3 // 4:
            head = head[: newline + 1]
        pages.append(head.rstrip("\n"))
        text = text[len(head) :]
    pages.append(text)
    return pages


def summarization_prompt(target_tokens: int) -> str:
    """The instructions a summarizer (an endpoint or the client's own model) follows."""
    return (
        "Summarise the conversation excerpt below so that the assistant can continue the work "
        "without it. Cover, as short bullet points: the key topics; decisions made and why; "
        "tools called and their outcomes; errors and how they were handled; and what is needed "
        f"to continue (open questions, next steps). Use at most about {target_tokens} tokens. "
        "Keep names, numbers, file paths and identifiers exactly; do not invent anything."
    )


def _quote(text: str, max_bytes: int = 160) -> str:
    return '"' + shorten_bytes(" ".join(text.split()), max_bytes) + '"'


def fallback_summary(entries: Sequence[Entry], max_bytes: int) -> str:
    """A deterministic summary when no model writes one: counts, first/last words, tools, errors.

    "N user messages, first: ..., last: ..., tools used: ..., N errors", shortened to fit.
    """
    users = [e for e in entries if e.type is EntryType.MESSAGE and e.role is Role.USER]
    assistants = [e for e in entries if e.type is EntryType.MESSAGE and e.role is Role.ASSISTANT]
    tools: dict[str, int] = {}
    for e in entries:
        if e.type is EntryType.TOOL_CALL and e.tool_name:
            tools[e.tool_name] = tools.get(e.tool_name, 0) + 1
    errors = [e for e in entries if e.is_error]
    contexts = [e for e in entries if e.type is EntryType.CONTEXT]
    parts = [f"{len(users)} user messages"]
    if users:
        parts.append(f"first: {_quote(users[0].content)}")
        if len(users) > 1:
            parts.append(f"last: {_quote(users[-1].content)}")
    parts.append(f"{len(assistants)} assistant messages")
    if assistants:
        parts.append(f"last answer: {_quote(assistants[-1].content)}")
    used = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(tools.items()))
    parts.append(f"tools used: {used or 'none'}")
    if contexts:
        sources = sorted({c.source for c in contexts if c.source})
        parts.append(
            f"context added: {len(contexts)}" + (f" ({', '.join(sources)})" if sources else "")
        )
    parts.append(f"{len(errors)} errors")
    if errors:
        parts.append(f"last error: {_quote(errors[-1].content)}")
    return shorten_bytes(", ".join(parts), max_bytes)


def fold_line(exchange: Exchange, max_bytes: int = 300) -> str:
    """One line of the running Q&A summary for an exchange that leaves the active window."""
    q = shorten_bytes(" ".join(exchange.question.split()), max_bytes // 3)
    a = shorten_bytes(" ".join(exchange.answer.split()), max_bytes - len(q.encode()))
    return f"- Q: {q} A: {a}"


_QA_LINE = re.compile(r"^- Q: (?P<q>.*?) A: (?P<a>.*)$")


def _shorten_qa_line(line: str, max_bytes: int) -> str:
    """Cut a "- Q: ... A: ..." line to `max_bytes` keeping the start of both halves.

    Trigger: the running Q&A summary is over its bound. Why: cutting the line from its end
    kept each question and dropped every answer. Outcome: the question keeps up to half of
    the room, the answer the rest (other lines are cut from the end as before).
    """
    match = _QA_LINE.match(line)
    if match is None or len(line.encode("utf-8")) <= max_bytes:
        return shorten_bytes(line, max_bytes)
    room = max_bytes - len(b"- Q:  A: ")
    q = shorten_bytes(match["q"], max(8, room // 2))
    a = shorten_bytes(match["a"], max(8, room - len(q.encode("utf-8"))))
    return f"- Q: {q} A: {a}"


def compress_qa_summary(text: str, max_bytes: int) -> str:
    """Shrink the running Q&A summary to about `max_bytes`, keeping every exchange's line.

    The longest lines are cut first, to a common cap (water-filling), so lines that are
    already short are never cut again; only if even 24-byte lines do not fit do the oldest
    lines go.
    """
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    sizes = [len(ln.encode("utf-8")) for ln in lines]
    room = max_bytes - (len(lines) - 1)  # the newlines

    def total(cap: int) -> int:
        return sum(min(size, cap) for size in sizes)

    low, high = 24, max(sizes, default=24)
    while low < high:  # the largest cap whose lines fit
        mid = (low + high + 1) // 2
        if total(mid) <= room:
            low = mid
        else:
            high = mid - 1
    cut = [_shorten_qa_line(ln, low) for ln in lines]
    while cut and len("\n".join(cut).encode("utf-8")) > max_bytes:
        cut.pop(0)
    return "\n".join(cut)


def _span(start: datetime, end: datetime) -> str:
    return f"{start.strftime('%Y-%m-%d %H:%M')} to {end.strftime('%Y-%m-%d %H:%M')}"


def cached_line(item: CachedResult, max_bytes: int = 1_000) -> str:
    """A cached tool result as one context line, its result cut to about `max_bytes`."""
    return f"[{item.describe()}] {shorten_bytes(canonical_json(item.result), max_bytes)}"


_SUMMARIES_HEAD = "=== Previous Conversation Summaries ==="
_RECENT_HEAD = "=== Recent Conversation ==="
_CACHED_HEAD = "=== Cached Tool Results (reuse with lookup_tool_result) ==="


def _summary_block(s: Summary) -> str:
    return (
        f"[Summary {s.id}, {_span(s.covers_from, s.covers_until)}, entries "
        f"#{s.entry_ids[0]}-#{s.entry_ids[-1]}]\n{s.text}"
    )


def _qa_head(qa_span: tuple[datetime, datetime] | None) -> str:
    span = f", {_span(*qa_span)}" if qa_span else ""
    return f"[Earlier questions and answers{span}]"


def _exchange_block(x: Exchange) -> str:
    when = x.timestamp.strftime("%Y-%m-%d %H:%M")
    return f"[Q&A {x.id} {when}] Q: {x.question}\nA: {x.answer}"


def _recent_block(item: Entry | Exchange) -> str:
    return _exchange_block(item) if isinstance(item, Exchange) else _entry_line(item)


def _recent_key(item: Entry | Exchange) -> tuple[datetime, int, int]:
    # At one instant an entry comes before an exchange (a question's entries lead to its answer).
    return (item.timestamp, isinstance(item, Exchange), item.id)


def render_context(
    summaries: Sequence[Summary],
    qa_summary: str,
    qa_span: tuple[datetime, datetime] | None,
    entries: Sequence[Entry],
    exchanges: Sequence[Exchange],
    cached: Sequence[str] = (),
) -> str:
    """Summaries, the recent conversation, then cached tool results, laid out for a model."""
    out = [_SUMMARIES_HEAD]
    if not summaries and not qa_summary:
        out.append("(none)")
    out.extend(_summary_block(s) for s in sorted(summaries, key=lambda s: s.id))
    if qa_summary:
        out.append(_qa_head(qa_span))
        out.append(qa_summary)
    out.append("")
    out.append(_RECENT_HEAD)
    recent: list[Entry | Exchange] = [*entries, *exchanges]
    if not recent:
        out.append("(none)")
    out.extend(_recent_block(item) for item in sorted(recent, key=_recent_key))
    if cached:
        out.append("")
        out.append(_CACHED_HEAD)
        out.extend(cached)
    return "\n".join(out)


@dataclass(frozen=True)
class FittedContext:
    """What of a session fits a token budget, laid out; each `omitted_*` counts what did not."""

    text: str
    summaries: list[Summary]
    qa_summary: str
    entries: list[Entry]
    exchanges: list[Exchange]
    cached: list[str]
    omitted_summaries: int = 0
    omitted_qa_lines: int = 0
    omitted_entries: int = 0
    omitted_exchanges: int = 0
    omitted_cached: int = 0


def fit_context(
    summaries: Sequence[Summary],
    qa_summary: str,
    qa_span: tuple[datetime, datetime] | None,
    entries: Sequence[Entry],
    exchanges: Sequence[Exchange],
    cached: Sequence[str],
    token_budget: int | None,
) -> FittedContext:
    """The session laid out within `token_budget` tokens (None: all of it).

    Spent in this order, each kind newest first and as a prefix (a newer item is never
    dropped for an older one that is shorter): the newest entry or exchange, the summaries,
    the Q&A summary's lines, the rest of the recent entries and exchanges together, then the
    cached results (a cached result can be fetched again, the conversation cannot). Every
    heading, label and joining newline is paid for, so the text's count is within the budget.
    Below the empty layout (the two section headings, about 22 tokens) nothing fits and the
    text is empty; the counts say what was left out.
    """
    # Split on newlines only: the text is joined with them (splitlines also cuts at \x1e).
    qa_lines = [line for line in qa_summary.split("\n") if line.strip()]
    everything = FittedContext(
        text="",
        summaries=sorted(summaries, key=lambda s: s.id),
        qa_summary="\n".join(qa_lines),
        entries=sorted(entries, key=lambda e: e.id),
        exchanges=sorted(exchanges, key=lambda x: x.id),
        cached=list(cached),
    )
    if token_budget is None:
        return replace(everything, text=_render(everything, qa_span))
    budget = TokenAllowance(token_budget, per_item=1)  # + the newline joining each block
    if not budget.take(render_context((), "", None, (), ())):
        return replace(
            everything,
            summaries=[],
            qa_summary="",
            entries=[],
            exchanges=[],
            cached=[],
            omitted_summaries=len(summaries),
            omitted_qa_lines=len(qa_lines),
            omitted_entries=len(entries),
            omitted_exchanges=len(exchanges),
            omitted_cached=len(cached),
        )
    recent: list[Entry | Exchange] = sorted([*entries, *exchanges], key=_recent_key, reverse=True)
    # The newest entry or exchange first: it is what the session is at now.
    kept_r, _ = budget.prefix(recent[:1], _recent_block)
    kept_s, gone_s = budget.prefix(reversed(everything.summaries), _summary_block)
    # The Q&A summary's heading is paid with its newest line: a heading alone says nothing.
    head = _qa_head(qa_span)
    newest_qa = list(enumerate(reversed(qa_lines)))
    kept_qa, gone_qa = budget.prefix(newest_qa, lambda p: f"{head}\n{p[1]}" if p[0] == 0 else p[1])
    if kept_r:  # the rest of the recent conversation, newest first, without a gap
        kept_r += budget.prefix(recent[1:], _recent_block)[0]
    # The cached section's blank line and heading are paid with its first result.
    kept_c, gone_c = budget.prefix(
        list(enumerate(cached)), lambda p: f"\n{_CACHED_HEAD}\n{p[1]}" if p[0] == 0 else p[1]
    )
    fitted = FittedContext(
        text="",
        summaries=kept_s[::-1],
        qa_summary="\n".join(line for _, line in reversed(kept_qa)),
        entries=[e for e in reversed(kept_r) if isinstance(e, Entry)],
        exchanges=[x for x in reversed(kept_r) if isinstance(x, Exchange)],
        cached=[line for _, line in kept_c],
        omitted_summaries=gone_s,
        omitted_qa_lines=gone_qa,
        omitted_cached=gone_c,
    )
    fitted = replace(
        fitted,
        omitted_entries=len(entries) - len(fitted.entries),
        omitted_exchanges=len(exchanges) - len(fitted.exchanges),
    )
    return replace(fitted, text=_render(fitted, qa_span))


def _render(fitted: FittedContext, qa_span: tuple[datetime, datetime] | None) -> str:
    return render_context(
        fitted.summaries,
        fitted.qa_summary,
        qa_span,
        fitted.entries,
        fitted.exchanges,
        fitted.cached,
    )
