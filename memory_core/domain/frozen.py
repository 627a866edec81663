"""The one base of immutable pydantic values (domain models and service results)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen"]


class Frozen(BaseModel):
    """A pydantic model whose instances cannot change after validation."""

    # defer_build: a model's validator is built at its first use, not at import. A cold
    # process (a Claude Code hook, `memstrata stats`) imports many models it never builds;
    # building them all cost a session-start hook ~20 ms.
    model_config = ConfigDict(frozen=True, defer_build=True)
