"""The errors memory_core raises; the server maps each type (never its text) to a tool error.

The tree::

    MemoryCoreError
    ├── NotFoundError
    │   ├── MemoryNotFoundError        (memory_id)
    │   └── SessionNotFoundError       (session_id)
    ├── InvalidInputError              (field, reason)
    │   └── InvalidQueryError
    ├── ConfirmationRequiredError      (action)
    ├── ConflictError                  (reason)
    ├── EmbeddingUnavailableError      (reason)
    ├── SummarizerError                (reason)
    └── StorageError                   (operation; __cause__ keeps the driver error)
        └── SchemaMismatchError        (reason)

Errors carry fields, not pre-rendered prose, so each entry point words them for its audience.
"""

from __future__ import annotations

__all__ = [
    "ConfirmationRequiredError",
    "ConflictError",
    "EmbeddingUnavailableError",
    "InvalidInputError",
    "InvalidQueryError",
    "MemoryCoreError",
    "MemoryNotFoundError",
    "NotFoundError",
    "SchemaMismatchError",
    "SessionNotFoundError",
    "StorageError",
    "SummarizerError",
]


class MemoryCoreError(Exception):
    """Root of every error raised on purpose by memory_core."""


class NotFoundError(MemoryCoreError):
    """Something that was asked for by identity does not exist."""


class MemoryNotFoundError(NotFoundError):
    """No memory with this id exists in the project."""

    def __init__(self, memory_id: int, project: str) -> None:
        super().__init__(f"memory {memory_id} not found in project {project!r}")
        self.memory_id = memory_id
        self.project = project


class SessionNotFoundError(NotFoundError):
    """No conversation session with this id exists in the project."""

    def __init__(self, session_id: str, project: str) -> None:
        super().__init__(f"session {session_id!r} not found in project {project!r}")
        self.session_id = session_id
        self.project = project


class SummarizerError(MemoryCoreError):
    """The configured summarizer endpoint failed; callers fall back to another source."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InvalidInputError(MemoryCoreError):
    """An argument is outside what is allowed; `field` names it, `reason` says what is allowed."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidQueryError(InvalidInputError):
    """A search query cannot be run (for example it holds no searchable word)."""


class ConfirmationRequiredError(MemoryCoreError):
    """A destructive action was asked for without its explicit confirmation."""

    def __init__(self, action: str) -> None:
        super().__init__(f"{action} needs confirm=true")
        self.action = action


class ConflictError(MemoryCoreError):
    """The write would break a uniqueness rule of the store, or its state has moved on.

    `next_step` says what to do instead, when re-reading and retrying would not help.
    """

    def __init__(self, reason: str, *, next_step: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.next_step = next_step


class EmbeddingUnavailableError(MemoryCoreError):
    """The embedding model cannot be loaded or used."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StorageError(MemoryCoreError):
    """The storage backend failed; `__cause__` holds the driver's own exception."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"storage failed during {operation}")
        self.operation = operation


class SchemaMismatchError(StorageError):
    """The database was written by an incompatible schema or embedding model."""

    def __init__(self, reason: str) -> None:
        super().__init__("schema check")
        self.reason = reason

    def __str__(self) -> str:
        return self.reason
