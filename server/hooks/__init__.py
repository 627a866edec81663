"""`memstrata hook <event>`: the commands Claude Code runs as `type: "command"` hooks.

They open the store directly (the same file or PostgreSQL database the MCP server uses; no
port), except that the prompt hook first asks a running `memstrata serve` of the same store, which
holds the embedding model warm, over a per-user Unix socket (server.hooks.listener,
server.hooks.warm). They never break the person's session: whatever goes wrong, they exit 0,
print nothing on stdout and write one line on stderr. The path from the console script to here
imports neither the MCP SDK nor rich (see server.cli).
"""
