"""The tool surface the tests expect, shared by the in-memory and end-to-end suites."""

TOOL_NAMES = frozenset(
    {
        "append",
        "append_many",
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

# The cache hierarchy (issue 5): session scratchpad, user preferences/playbooks, business context.
KNOWLEDGE_TOOLS = frozenset(
    {
        "scratchpad_write",
        "scratchpad_read",
        "scratchpad_promote",
        "preferences_update",
        "preferences_get",
        "preferences_find",
        "playbook_record",
        "playbook_find",
        "ingest_document",
        "search_business_context",
        "share_business_patterns",
        "seed_tenant_from_agent_md",
        "export_agent_md",
        # Issue 18: knowledge a person can review and correct.
        "preferences_list",
        "preferences_delete",
        "scratchpad_delete",
        "list_documents",
        "delete_documents",
    }
)
KNOWLEDGE_DESTRUCTIVE_TOOLS = frozenset(
    {"preferences_delete", "scratchpad_delete", "delete_documents"}
)
KNOWLEDGE_READ_ONLY_TOOLS = frozenset(
    {
        "preferences_list",
        "list_documents",
        "scratchpad_read",
        "preferences_get",
        "preferences_find",
        "playbook_find",
        "search_business_context",
        "export_agent_md",
    }
)
TOOL_NAMES = TOOL_NAMES | KNOWLEDGE_TOOLS
READ_ONLY_TOOLS = READ_ONLY_TOOLS | KNOWLEDGE_READ_ONLY_TOOLS

# Conversation memory (issue 4): sessions, entries, summaries, Q&A cycles, the result cache.
CONVERSATION_TOOLS = frozenset(
    {
        "start_session",
        "list_sessions",
        "add_session_entry",
        "get_session_context",
        "get_session_stats",
        "compress_session",
        "read_summary_request",
        "submit_session_summary",
        "finalize_exchange",
        "export_session",
        "import_session",
        "clear_session",
        "update_memory_config",
        "cache_tool_result",
        "lookup_tool_result",
    }
)
TOOL_NAMES = TOOL_NAMES | CONVERSATION_TOOLS
READ_ONLY_TOOLS = READ_ONLY_TOOLS | {
    "list_sessions",
    "get_session_context",
    "get_session_stats",
    "read_summary_request",
    "export_session",
}
DESTRUCTIVE_TOOLS = DESTRUCTIVE_TOOLS | {"clear_session"} | KNOWLEDGE_DESTRUCTIVE_TOOLS

# One truth per fact (issue 32): the curation toolset.
CURATION_TOOLS = frozenset({"update", "history", "pin", "unpin", "list_memories", "forget_where"})
TOOL_NAMES = TOOL_NAMES | CURATION_TOOLS
READ_ONLY_TOOLS = READ_ONLY_TOOLS | {"history", "list_memories"}
DESTRUCTIVE_TOOLS = DESTRUCTIVE_TOOLS | {"forget_where"}

# Toolsets: run-time discovery of the groups above.
TOOL_NAMES = TOOL_NAMES | {"enable_toolset"}
READ_ONLY_TOOLS = READ_ONLY_TOOLS | {"enable_toolset"}

# What a client lists with the default MEMSTRATA_TOOLSETS (core, maintenance).
DEFAULT_TOOLS = frozenset(
    {
        "append",
        "search",
        "learn",
        "recall",
        "load_context",
        "forget",
        "enable_toolset",
        "get_memory_stats",
        "recalculate_memory_tiers",
        "prune_expired_contexts",
        "compact",
        "clear",
    }
)
