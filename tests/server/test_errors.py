import pytest
from mcp.server.mcpserver.exceptions import ToolError

from memory_core import errors
from server.errors import MAPPED_ERRORS, domain_errors_as_tool_errors


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_domain_error_has_a_mapping() -> None:
    assert _subclasses(errors.MemoryCoreError) == set(MAPPED_ERRORS)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (errors.MemoryNotFoundError(7, "p"), "No memory with id 7"),
        (errors.NotFoundError("thing"), "Not found"),
        (errors.InvalidQueryError("query", "empty"), "Retry with plain words"),
        (errors.InvalidInputError("limit", "too big"), "Invalid `limit`: too big"),
        (errors.ConfirmationRequiredError("clear"), "needs confirm=true"),
        (errors.ConflictError("key taken"), "Conflict: key taken"),
        (errors.EmbeddingUnavailableError("no model"), "mode='keyword'"),
        (errors.SchemaMismatchError("too new"), "cannot be used: too new"),
        (errors.StorageError("add"), "nothing was changed"),
    ],
)
def test_mapped_messages_say_what_to_do(exc: errors.MemoryCoreError, expected: str) -> None:
    with pytest.raises(ToolError, match=expected), domain_errors_as_tool_errors("t"):
        raise exc


def test_tool_errors_pass_through_untouched() -> None:
    with pytest.raises(ToolError, match=r"^as is$"), domain_errors_as_tool_errors("t"):
        raise ToolError("as is")
