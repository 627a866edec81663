"""The tool surface the tests expect, shared by the in-memory and end-to-end suites."""

TOOL_NAMES = frozenset(
    {
        "append",
        "search",
        "learn",
        "recall",
        "load_context",
        "compact",
        "clear",
        "forget",
        "get_memory_stats",
        "recalculate_memory_tiers",
        "prune_expired_contexts",
    }
)
READ_ONLY_TOOLS = frozenset({"search", "recall", "load_context", "get_memory_stats"})
DESTRUCTIVE_TOOLS = frozenset({"forget", "clear", "prune_expired_contexts", "compact"})
