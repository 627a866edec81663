"""What `memstrata stats` prints: a plain aligned table, or the JSON document for scripts.

Both the lean path (server/cli/lean_stats.py, from the kept counts) and the full one
(server/cli/memory.py, through the maintenance service) print through here, from the same
report dicts (the shape of `StatsOut.model_dump(mode="json")`), so their output is one format.
Why no rich: importing rich's table costs a cold `stats` ~40 ms (issue 21: under 250 ms), and
a table of numbers needs only padding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["stats_json", "stats_table"]

Report = Mapping[str, Any]


def stats_json(database: str, reports: Sequence[Report]) -> str:
    """The `stats --json` document: the file, its size and every project's report."""
    document = {
        "database": database,
        "database_bytes": reports[0]["database_bytes"],
        "projects": list(reports),
    }
    return json.dumps(document, indent=2, ensure_ascii=False, default=str)


def stats_table(database: str, reports: Sequence[Report]) -> str:
    """A title, one aligned row per project, then each project's summary and health notes."""
    tiers = list(reports[0]["by_tier"])
    layers = list(reports[0]["by_layer"])
    header = ["project", "total", *tiers, *layers, "text bytes", "never read"]
    rows = [
        [
            str(r["project"]),
            str(r["total"]),
            *(str(r["by_tier"].get(t, 0)) for t in tiers),
            *(str(r["by_layer"].get(layer, 0)) for layer in layers),
            str(r["content_bytes"]),
            str(r["never_accessed"]),
        ]
        for r in reports
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        # The project is text (left-aligned); every other column is a count (right-aligned).
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    lines = [f"memstrata: {database} ({reports[0]['database_bytes']} bytes)", line(header)]
    lines += [line(row).rstrip() for row in rows]
    for r in reports:
        lines.append(
            f"project {r['project']}: {r['total']} memories, {r['content_bytes']} bytes of text,"
            f" {r['never_accessed']} never read"
        )
        lines += [f"  note: {note['message']}" for note in r["health"]]
    return "\n".join(lines)
