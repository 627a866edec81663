"""Map domain errors (by type, never by message text) to tool errors the model can act on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from memory_core.errors import (
    ConfirmationRequiredError,
    ConflictError,
    EmbeddingUnavailableError,
    InvalidInputError,
    InvalidQueryError,
    MemoryCoreError,
    MemoryNotFoundError,
    NotFoundError,
    SchemaMismatchError,
    SessionNotFoundError,
    StorageError,
    SummarizerError,
)

__all__ = ["MAPPED_ERRORS", "domain_errors_as_resource_errors", "domain_errors_as_tool_errors"]

log = structlog.get_logger(__name__)

# Every MemoryCoreError subclass must appear here (a test walks the tree to enforce it).
MAPPED_ERRORS: tuple[type[MemoryCoreError], ...] = (
    MemoryNotFoundError,
    SessionNotFoundError,
    NotFoundError,
    InvalidQueryError,
    InvalidInputError,
    ConfirmationRequiredError,
    ConflictError,
    EmbeddingUnavailableError,
    SchemaMismatchError,
    StorageError,
    SummarizerError,
)


def _message(tool: str, exc: MemoryCoreError) -> str:  # noqa: C901 - one case per error type
    match exc:
        case MemoryNotFoundError():
            return (
                f"No memory with id {exc.memory_id} in project {exc.project!r}; it may have been "
                "forgotten or pruned. Fix the id (use `search` or `load_context` to find current "
                "ids) and retry."
            )
        case SessionNotFoundError():
            return (
                f"No session {exc.session_id!r} in project {exc.project!r}. Call "
                "`start_session` first (or check the id with `list_sessions`), then retry."
            )
        case SummarizerError():
            return f"The summarizer failed ({exc.reason}); retry with source='fallback'."
        case NotFoundError():
            return f"Not found: {exc}. Check the identifier and retry."
        case InvalidQueryError():
            return f"Invalid `{exc.field}`: {exc.reason}. Retry with plain words."
        case InvalidInputError():
            return f"Invalid `{exc.field}`: {exc.reason}. Fix the argument and retry."
        case ConfirmationRequiredError():
            return (
                f"`{tool}` deletes memories and needs confirm=true. Ask the user first, then "
                "retry with confirm=true."
            )
        case ConflictError():
            return (
                f"Conflict: {exc.reason}. {exc.next_step or 'Re-read the current value and retry.'}"
            )
        case EmbeddingUnavailableError():
            return f"Semantic search is unavailable ({exc.reason}); use mode='keyword'."
        case SchemaMismatchError():
            return f"The memory store cannot be used: {exc.reason}. Stop and tell the user."
        case StorageError():
            return (
                f"The memory store failed during {exc.operation}; nothing was changed. "
                "Retry once; if it fails again, stop and tell the user."
            )
        case _:
            return f"`{tool}` failed: {type(exc).__name__}. Stop and tell the user."


@contextmanager
def domain_errors_as_resource_errors(uri: str) -> Iterator[None]:
    """The resource twin of `domain_errors_as_tool_errors` (same wording, resource errors)."""
    with structlog.contextvars.bound_contextvars(resource=uri):
        try:
            yield
        except (MemoryNotFoundError, InvalidInputError) as exc:
            # The SDK answers ResourceNotFoundError with -32602 (invalid params), which is
            # what a bad id in the URI is; any other ResourceError becomes an internal error.
            raise ResourceNotFoundError(_message("read", exc)) from exc
        except MemoryCoreError as exc:
            raise ResourceError(_message("read", exc)) from exc
        except Exception as exc:
            log.exception("resource.failed")
            raise ResourceError(
                f"Internal error reading {uri}; details are in the server log."
            ) from exc


@contextmanager
def domain_errors_as_tool_errors(tool: str, request_id: str | None = None) -> Iterator[None]:
    """Run a tool body with logging context bound and errors turned into ToolError.

    Unexpected exceptions are logged in full and reach the model only as a generic message,
    so no SQL, file path or stack trace leaks into the conversation.
    """
    with structlog.contextvars.bound_contextvars(tool=tool, request_id=request_id):
        try:
            yield
        except ToolError:
            raise
        except MemoryCoreError as exc:
            log.info("tool.rejected", error=type(exc).__name__, detail=str(exc))
            raise ToolError(_message(tool, exc)) from exc
        except Exception as exc:
            log.exception("tool.failed")
            raise ToolError(f"Internal error in `{tool}`; details are in the server log.") from exc
