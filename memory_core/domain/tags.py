"""Tags: short labels a memory is filed under, checked the same way on every write path."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from memory_core.errors import InvalidInputError

__all__ = ["MAX_TAGS", "MAX_TAG_CHARS", "check_tags"]

MAX_TAGS = 20
MAX_TAG_CHARS = 50
# Letters and digits, and inside a tag `-_.:/` (so "area:billing", "v2.1", "team/infra").
_TAG = re.compile(r"[^\W_](?:[\w.:/-]*[^\W_])?")


def check_tags(tags: Iterable[str] | None, field: str = "tags") -> tuple[str, ...]:
    """Tags as stored: NFKC, lower case, trimmed, each once, in the order given.

    Raises:
        InvalidInputError: More than MAX_TAGS tags, or a tag that is empty, longer than
            MAX_TAG_CHARS or holds other characters than letters, digits and `-_.:/`.
    """
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise InvalidInputError(field, "must be a list of strings")
    out: list[str] = []
    for n, raw in enumerate(tags):
        if not isinstance(raw, str):
            raise InvalidInputError(f"{field}[{n}]", "must be a string")
        tag = unicodedata.normalize("NFKC", raw).strip().lower()
        if not tag or len(tag) > MAX_TAG_CHARS or not _TAG.fullmatch(tag):
            raise InvalidInputError(
                f"{field}[{n}]",
                f"must be 1-{MAX_TAG_CHARS} letters or digits (and -_.:/ inside), got {raw!r}",
            )
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(field, f"must hold at most {MAX_TAGS} tags (got {len(out)})")
    return tuple(out)
