"""The JSON-RPC error answer for a stdio line the MCP SDK cannot read (issue 34.6).

Trigger: the SDK's stdio transport (mcp.server.stdio, mcp 2.3) hands a line it cannot
validate to its dispatcher as an exception, which logs it and drops it: a client that sent
a line that is not JSON, starts with a UTF-8 BOM, holds two messages, a lone surrogate or
nesting past the parser's depth got no answer at all and waited for its timeout.
Outcome: such a line gets a JSON-RPC error on stdout instead, and the server keeps serving:
-32700 (parse error) when the line is not JSON the SDK reads, -32600 (invalid request) when
it is JSON but no JSON-RPC message. The id is null unless the line names one the standard
library can still read (a lone surrogate elsewhere in the line), so that client stops
waiting.

Lines are judged exactly as the SDK's transport judges them: decoded as UTF-8 with
replacement, split at CR, LF and CRLF (its text reader's universal newlines), each piece
validated by the SDK's own message adapter. Blank pieces are no message and get no answer.

`sort_line` serves server.cli.lean_serve, which feeds the SDK every line after its
hand-over; `serve_stdio_answering` serves the MCP server (server.protocol.surface's run_stdio_async)
over the SDK's stdio transport with the same answers where the lean wire did not start.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "error_answer", "serve_stdio_answering", "sort_line"]

PARSE_ERROR = types.PARSE_ERROR  # -32700
INVALID_REQUEST = -32600
# The SDK's text reader splits lines at each of these (io.TextIOWrapper, newline=None).
_NEWLINES = re.compile(r"\r\n|\r|\n")
_MAX_DETAIL = 200


def _line_id(text: str) -> str | int | None:
    """The request id a line names, when the standard library can read one; else None."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def error_answer(text: str, exc: Exception) -> types.JSONRPCError:
    """The error answering `text`, a line the SDK's adapter refused with `exc`."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    not_json = not errors or any(e["type"] == "json_invalid" for e in errors)
    if not_json:
        detail = errors[0]["msg"] if errors else str(exc)
        code, message = PARSE_ERROR, f"Parse error: {detail}"
    else:
        code, message = INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=_line_id(text),
        error=types.ErrorData(code=code, message=message[:_MAX_DETAIL]),
    )


def _frame(answer: types.JSONRPCError) -> bytes:
    # As the SDK's stdio writer frames its messages.
    return answer.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def sort_line(raw: bytes) -> tuple[bytes, list[bytes]]:
    """Split one line of stdin into what to feed the SDK and the errors to answer at once.

    Returns:
        (the pieces the SDK reads, each ending in a newline; the framed error answers).
    """
    text = raw.decode("utf-8", errors="replace")
    feed: list[str] = []
    answers: list[bytes] = []
    for piece in _NEWLINES.split(text):
        if not piece.strip():
            continue
        try:
            types.jsonrpc_message_adapter.validate_json(piece, by_name=False)
        except Exception as exc:  # whatever the adapter refuses, the SDK would drop
            answers.append(_frame(error_answer(piece, exc)))
        else:
            feed.append(piece + "\n")
    return "".join(feed).encode(), answers


async def serve_stdio_answering(lowlevel: Any, options: Any) -> None:
    """Run a low-level MCP server over the SDK's stdio transport, answering bad lines.

    Each line the transport cannot read gets its JSON-RPC error instead of being dropped;
    `options` are the server's initialization options (server.protocol.surface passes its own).
    """
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def sift() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        answer = error_answer("", item)
                        await write_stream.send(SessionMessage(answer))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sift)
            await lowlevel.run(receive, write_stream, options)
            tg.cancel_scope.cancel()
