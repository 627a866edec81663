"""Result models whose structured content leaves out the fields left at their default."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["Sparse"]


class Sparse(BaseModel):
    """A tool result sent without its default-valued fields (the output schema gives them).

    For results a model reads whole: some clients hand the model the structured content in
    place of the text answer, and `"key": null, "redacted": {}, "trimmed": 0` tell it nothing.
    """
