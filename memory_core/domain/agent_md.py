"""Read an agent.md into sections, and write business context back as one (pure)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["AGENT_MD_PREFIX", "AgentSection", "parse_agent_md", "render_agent_md"]

AGENT_MD_PREFIX = "agent.md#"
LEARNED_TITLE = "Learned"
_HEADING = re.compile(r"^(#{1,2})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class AgentSection:
    """One section of an agent.md: its document source and its text (heading included)."""

    source: str
    text: str


def _slug(title: str) -> str:
    return _SLUG.sub("-", title.lower()).strip("-") or "section"


def parse_agent_md(text: str) -> list[AgentSection]:
    """Split an agent.md at its level-1 and level-2 headings, one section per heading.

    Text before the first heading becomes the section `agent.md#intro`. Sources are
    `agent.md#<slug of the heading>`, numbered `-2`, `-3`... when a heading repeats, so the
    same file always yields the same sources and re-uploading it changes only what changed.
    Sections with no text besides their heading are left out.
    """
    cuts = [m.start() for m in _HEADING.finditer(text)]
    bounds = [0, *cuts, len(text)] if not cuts or cuts[0] != 0 else [*cuts, len(text)]
    sections: list[AgentSection] = []
    seen: dict[str, int] = {}
    for begin, end in itertools.pairwise(bounds):
        body = text[begin:end].strip()
        heading = _HEADING.match(body)
        if not body or (heading is not None and heading.end() == len(body)):
            continue  # nothing but a heading: no content to search
        slug = _slug(heading.group(2)) if heading else "intro"
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:
            slug = f"{slug}-{seen[slug]}"
        sections.append(AgentSection(source=AGENT_MD_PREFIX + slug, text=body))
    return sections


def render_agent_md(seeded: Sequence[AgentSection], learned: Sequence[str]) -> str:
    """An agent.md holding the seeded sections verbatim, then what was learned since.

    Uploading the result to a new tenant recreates every section (learned items arrive as one
    `Learned` section), so a tenant's context can move between stores.
    """
    parts = [s.text for s in seeded]
    if learned:
        items = "\n".join("- " + " ".join(item.split()) for item in learned)
        parts.append(f"## {LEARNED_TITLE}\n\n{items}")
    return "\n\n".join(parts) + "\n" if parts else ""
