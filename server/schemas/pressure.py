"""What `enforce_memory_cap` answers (issue 33.4)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory_core.services.pressure import CapOutcome

__all__ = ["CapOut"]

_SHOWN = 20  # ids named in the text answer; the structured answer has them all


class CapOut(BaseModel):
    """Result of `enforce_memory_cap`."""

    project: str
    dry_run: bool
    cap: int | None = Field(description="Most memories the project keeps; null: no cap set.")
    size: int = Field(description="Memories the project held before.")
    target: int | None = Field(description="Where enforcement brings a project over the cap.")
    deleted: int = Field(description="Memories deleted (0 on a dry run).")
    archived: int = Field(description="How many of `ids` were ARCHIVED (the rest EXPIRED).")
    short: int = Field(
        description="How many more would have to go to reach the target: only EXPIRED (and, "
        "if allowed, ARCHIVED) memories that are not pinned and replaced no other may go."
    )
    ids: list[int] = Field(description="Ids deleted, or that would be on a dry run.")

    @classmethod
    def of(cls, outcome: CapOutcome) -> CapOut:
        """The answer for one project's enforcement."""
        return cls(
            project=outcome.project,
            dry_run=outcome.dry_run,
            cap=outcome.cap,
            size=outcome.size,
            target=outcome.target,
            deleted=0 if outcome.dry_run else len(outcome.ids),
            archived=outcome.archived,
            short=outcome.short,
            ids=outcome.ids,
        )

    def as_text(self) -> str:
        """What was (or would be) deleted, and why."""
        if self.cap is None:
            return f"No storage cap is set (MEMSTRATA_PRESSURE__MAX_MEMORIES); {self.size} kept."
        if self.size <= self.cap:
            return f"Project {self.project} holds {self.size} of at most {self.cap} memories."
        verb = "Would delete" if self.dry_run else "Deleted"
        shown = ", ".join(f"#{i}" for i in self.ids[:_SHOWN])
        more = f" and {len(self.ids) - _SHOWN} more" if len(self.ids) > _SHOWN else ""
        text = (
            f"Project {self.project} holds {self.size} memories, over its cap of {self.cap}. "
            f"{verb} {len(self.ids)} least used ({self.archived} ARCHIVED)"
            f"{': ' + shown + more if shown else ''}."
        )
        if self.short:
            text += f" {self.short} more would have to go, but nothing else may."
        return text
