"""The one base of immutable pydantic values (domain models and service results)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen"]


class Frozen(BaseModel):
    """A pydantic model whose instances cannot change after validation."""

    model_config = ConfigDict(frozen=True)
