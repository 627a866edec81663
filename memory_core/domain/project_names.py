"""What a project name may be, as one pattern; no pydantic.

`check_project` (domain/inputs.py) raises with it for client input; the lean `memstrata stats`
(server/cli/lean_stats.py) answers only for stored names it accepts, since the full path
checks every name it reports (a store written by an early version may hold a name ending in
a newline, which its pattern then accepted).
"""

from __future__ import annotations

import re

__all__ = ["PROJECT_NAME"]

# \Z, not $: `$` also matches before a final newline, and "work\n" is not a project name.
PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}\Z")
