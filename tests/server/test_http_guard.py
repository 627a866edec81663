"""The grant check of the HTTP edge: hostile JSON-RPC shapes, and the real tools' grants."""

from __future__ import annotations

from server.http.app import build_http_app
from server.http.auth import Grant
from server.http.guard import HttpGuard, _messages, refusal
from server.settings import Settings

ALPHA = Grant(name="alpha", token="a" * 32, projects=("alpha",))
READER = Grant(name="reader", token="r" * 32, read_only=True)


def check(grant: Grant, message: object) -> str | None:
    return refusal(
        grant,
        message,
        default_project="default",
        read_only_tools=frozenset({"search"}),
        unscoped_tools=frozenset({"search_business_context"}),
    )


def call(name: object, **arguments: object) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_odd_tool_names_are_refused_not_crashed_on() -> None:
    assert check(READER, call(["search"])) == "the tool name must be a string"
    assert check(ALPHA, call({"x": 1})) == "the tool name must be a string"


def test_project_given_as_the_text_null_means_the_default_project() -> None:
    reason = check(ALPHA, call("search", query="x", project="null"))
    assert reason is not None and "'default'" in reason
    assert check(ALPHA, call("search", query="x", project="alpha")) is None
    assert check(ALPHA, call("search_business_context", tenant="t", query="x")) is not None


def test_deep_or_broken_json_is_left_to_the_transport() -> None:
    assert list(_messages(b"[" * 100_000 + b"]" * 100_000)) == []
    assert list(_messages(b"{not json")) == []
    assert len(list(_messages(b'[{"a": 1}, {"b": 2}]'))) == 2


async def test_knowledge_review_tools_stay_inside_the_grants(settings: Settings) -> None:
    # The sets come from the real tools' annotations and schemas, as `serve --http` builds them.
    guard = await build_http_app(settings, "127.0.0.1", 8765)
    assert isinstance(guard, HttpGuard)
    reader = Grant(name="reader", token="r" * 32, read_only=True)

    def why(grant: Grant, tool: str, **arguments: object) -> str | None:
        return refusal(
            grant,
            call(tool, **arguments),
            default_project=settings.project,
            read_only_tools=guard.read_only_tools,
            unscoped_tools=guard.unscoped_tools,
        )

    for tool in ("preferences_delete", "scratchpad_delete", "delete_documents"):
        assert "read-only" in (why(reader, tool, user="u", tenant="t", confirm=True) or "")
        assert "not scoped by project" in (why(ALPHA, tool, user="u", tenant="t") or "")
    assert why(reader, "playbook_find", user="u", query="q") is None
    refused = why(reader, "playbook_find", user="u", query="q", session_id="s1")
    assert refused is not None and "read-only" in refused
    for tool in ("preferences_list", "list_documents"):
        assert why(reader, tool, user="u", tenant="t") is None
        assert "not scoped by project" in (why(ALPHA, tool, user="u", tenant="t") or "")
